// Speed of the step-time model: one full estimate (memory + time) of a loaded model and layout.
#include <benchmark/benchmark.h>

#include "gpuplan/estimate.hpp"
#include "gpuplan/model_io.hpp"

namespace {

gpuplan::EstimateInputs llama70b_on_64_h100() {
  gpuplan::EstimateInputs in;
  in.memory.model = gpuplan::model_from_catalog("llama-3.1-70b");
  in.memory.training.seq_len = 8192;
  in.memory.training.micro_batch = 1;
  in.memory.training.global_batch = 512;
  in.memory.layout.gpus = 64;
  in.memory.layout.tp = 8;
  in.memory.layout.pp = 4;
  in.memory.layout.zero = 1;
  in.memory.layout.sequence_parallel = true;
  in.memory.layout.recompute = gpuplan::Recompute::selective;
  in.memory.overheads = gpuplan::default_overheads();
  const gpuplan::Cluster c = gpuplan::make_cluster("dgx-h100", 8);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = gpuplan::fabric_from_cluster(c);
  gpuplan::prepare_estimate(in);  // loaded: parameter counts, FLOPs per token, perf constants cached
  return in;
}

void BM_EstimateStep(benchmark::State& state) {
  const gpuplan::EstimateInputs in = llama70b_on_64_h100();
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::estimate_step(in));
}
BENCHMARK(BM_EstimateStep);

}  // namespace
