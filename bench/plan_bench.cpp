// Layout search throughput: the exhaustive (pruned) search of GPT-3 175B on 256 A100 80GB GPUs (32 DGX A100,
// sequence 2048, global batch 1024) with layouts decided per second, and the unpruned rate of full evaluations
// (memory + estimate_step) on a smaller case.
#include <benchmark/benchmark.h>

#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/plan.hpp"

namespace {

gpuplan::PlanInputs gpt3() {
  gpuplan::PlanInputs in;
  in.base.model = gpuplan::model_from_catalog("gpt3-175b");
  in.base.training.seq_len = 2048;
  in.base.training.global_batch = 1024;
  in.base.overheads = gpuplan::default_overheads();
  gpuplan::set_cluster(in, gpuplan::make_cluster("dgx-a100", 32));
  in.top_k = 5;
  in.explain = false;
  return in;
}

// The whole search with pruning (what `gpuplan plan` runs, without the explanation's extra searches).
void BM_PlanGpt3_256xA100(benchmark::State& state) {
  gpuplan::PlanInputs in = gpt3();
  in.threads = static_cast<int>(state.range(0));
  std::uint64_t space = 0, evaluated = 0, timed = 0;
  for (auto _ : state) {
    const gpuplan::PlanResult r = gpuplan::search_plans_threaded(in);
    space = r.space;
    evaluated = r.evaluated;
    timed = r.timed;
    benchmark::DoNotOptimize(r.plans.data());
  }
  state.counters["space"] = static_cast<double>(space);
  state.counters["evaluated"] = static_cast<double>(evaluated);
  state.counters["timed"] = static_cast<double>(timed);
  state.counters["layouts_per_s"] = benchmark::Counter(static_cast<double>(space) * static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlanGpt3_256xA100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same search with the explanation (sensitivity runs one constrained search per alternative).
void BM_PlanGpt3_256xA100_Explained(benchmark::State& state) {
  gpuplan::PlanInputs in = gpt3();
  in.explain = true;
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::search_plans_threaded(in).plans.data());
}
BENCHMARK(BM_PlanGpt3_256xA100_Explained)->Unit(benchmark::kMillisecond)->UseRealTime();

// Every layout evaluated (no pruning): memory and estimate_step of each layout that fits, per second.
void BM_PlanExhaustive_Llama8B_8xH100(benchmark::State& state) {
  gpuplan::PlanInputs in;
  in.base.model = gpuplan::model_from_catalog("llama-3.1-8b");
  in.base.training.seq_len = 4096;
  in.base.training.global_batch = 64;
  in.base.overheads = gpuplan::default_overheads();
  gpuplan::set_cluster(in, gpuplan::make_cluster("dgx-h100", 1));
  in.explain = false;
  in.prune = false;
  in.threads = static_cast<int>(state.range(0));
  std::uint64_t evaluated = 0, timed = 0;
  for (auto _ : state) {
    const gpuplan::PlanResult r = gpuplan::search_plans_threaded(in);
    evaluated += r.evaluated;
    timed += r.timed;
    benchmark::DoNotOptimize(r.plans.data());
  }
  state.counters["evaluations_per_s"] = benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsRate);
  state.counters["estimate_steps_per_s"] = benchmark::Counter(static_cast<double>(timed), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlanExhaustive_Llama8B_8xH100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
