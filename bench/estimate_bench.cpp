// Speed of the step-time model: one full estimate (memory + time) of a layout, with the job prepared once (as a
// search or a sweep runs it) and from scratch (estimate_step).
#include <benchmark/benchmark.h>

#include "gpuplan/estimate.hpp"
#include "gpuplan/model_io.hpp"
#include "memory/memory_model.hpp"
#include "perf/step_model.hpp"

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
  return in;
}

// What estimate_step does once the job is prepared (parameter counts, FLOPs per token, compute constants).
void BM_EstimateStep(benchmark::State& state) {
  const gpuplan::EstimateInputs in = llama70b_on_64_h100();
  const gpuplan::perf::StepJob job(in);
  const gpuplan::memory::MemoryJob memory_job(in.memory);
  for (auto _ : state) {
    const gpuplan::perf::StepModel model(in, job);
    gpuplan::StepEstimate r = model.time(model.layout());
    r.memory = gpuplan::memory::MemoryModel(memory_job, model.layout(), model.stages())
                   .report(gpuplan::memory::variant_of(model.layout(), in.memory.training.micro_batch), false);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_EstimateStep);

// estimate_step as a one-off call: the job is prepared every time.
void BM_EstimateStepFromScratch(benchmark::State& state) {
  const gpuplan::EstimateInputs in = llama70b_on_64_h100();
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::estimate_step(in));
}
BENCHMARK(BM_EstimateStepFromScratch);

}  // namespace
