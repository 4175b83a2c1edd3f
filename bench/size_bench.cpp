// Sizing speed: `gpuplan size` for Llama-3.1-405B at sequence 8k over 4 systems x 12 node counts (1 to 2048), every
// layout of every point searched, on 2 threads.
#include <benchmark/benchmark.h>

#include "gpuplan/host.hpp"

namespace {

void BM_Size_Llama405B_4Systems_12NodeCounts(benchmark::State& state) {
  gpuplan::api::SizeRequest request;
  request.model.name_or_path = "llama-3.1-405b";
  request.tokens = "15T";
  request.training.seq_len = 8192;
  request.global_batch_tokens = "16M";
  request.nodes = "1:2048";
  request.threads = 2;
  std::uint64_t evaluated = 0;
  for (auto _ : state) {
    const gpuplan::api::SizeResult r = gpuplan::api::answer(request);
    evaluated = r.layouts_evaluated;
    benchmark::DoNotOptimize(r.points.data());
  }
  state.counters["layouts_evaluated"] = static_cast<double>(evaluated);
}

}  // namespace

BENCHMARK(BM_Size_Llama405B_4Systems_12NodeCounts)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
