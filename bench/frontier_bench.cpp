// Search speed at frontier scale: what `gpuplan plan` runs (the search and its explanation) for three jobs of the
// size teams plan today, on 2 threads.
#include <benchmark/benchmark.h>

#include <string>

#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/plan.hpp"

namespace {

gpuplan::PlanInputs job(const std::string& model, int nodes, std::int64_t seq_len, std::int64_t global_batch) {
  gpuplan::PlanInputs in;
  in.base.model = gpuplan::model_from_catalog(model);
  in.base.training.seq_len = seq_len;
  in.base.training.global_batch = global_batch;
  in.base.overheads = gpuplan::default_overheads();
  gpuplan::set_cluster(in, gpuplan::make_cluster("dgx-h100", nodes));
  in.top_k = 3;
  in.threads = 2;
  return in;
}

void run(benchmark::State& state, const gpuplan::PlanInputs& in) {
  std::uint64_t space = 0, timed = 0;
  for (auto _ : state) {
    const gpuplan::PlanResult r = gpuplan::search_plans_threaded(in);
    space = r.space;
    timed = r.timed;
    benchmark::DoNotOptimize(r.plans.data());
  }
  state.counters["space"] = static_cast<double>(space);
  state.counters["timed"] = static_cast<double>(timed);
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
