// Search speed at frontier scale: what `gpuplan plan` runs (the request resolved as the command line resolves it,
// the search and its explanation) for three jobs of the size teams plan today, on 2 threads.
#include <benchmark/benchmark.h>

#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/host.hpp"

namespace {

gpuplan::api::PlanRequest job(const std::string& model, int nodes, std::int64_t seq_len, std::int64_t global_batch) {
  return gpuplan::api::from_json<gpuplan::api::PlanRequest>({{"model", model},
                                                             {"system", "dgx-h100"},
                                                             {"nodes", nodes},
                                                             {"seq_len", seq_len},
                                                             {"global_batch", global_batch},
                                                             {"top", 3},
                                                             {"threads", 2}});
}

void run(benchmark::State& state, const gpuplan::api::PlanRequest& request) {
  const gpuplan::ThreadRunner threads;
  std::uint64_t space = 0, feasible = 0;
  for (auto _ : state) {
    const gpuplan::api::PlanResult r = gpuplan::api::run(request, {}, &threads);
    space = r.space;
    feasible = r.feasible;
    benchmark::DoNotOptimize(r.plans.data());
  }
  state.counters["space"] = static_cast<double>(space);
  state.counters["feasible"] = static_cast<double>(feasible);
}

// Llama-3.1-405B on 16,384 H100 (2,048 DGX H100) at sequence 8k.
void BM_Frontier_Llama405B_16384xH100(benchmark::State& state) { run(state, job("llama-3.1-405b", 2048, 8192, 2048)); }
// DeepSeek-V3 (671B MoE) on 2,048 H100 with expert parallelism.
void BM_Frontier_DeepSeekV3_2048xH100(benchmark::State& state) { run(state, job("deepseek-v3", 256, 4096, 8192)); }
// Mixtral 8x22B on 512 H100.
void BM_Frontier_Mixtral8x22B_512xH100(benchmark::State& state) { run(state, job("mixtral-8x22b", 64, 4096, 1024)); }

BENCHMARK(BM_Frontier_Llama405B_16384xH100)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Frontier_DeepSeekV3_2048xH100)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Frontier_Mixtral8x22B_512xH100)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
