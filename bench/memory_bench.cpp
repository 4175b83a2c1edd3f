// Speed of the memory model: one evaluation of a loaded model and layout, and a whole `gpuplan memory` run.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>

#include "gpuplan/memory.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/api.hpp"
#include "memory/memory_model.hpp"

extern char** environ;

namespace {

gpuplan::MemoryInputs llama70b_on_64() {
  gpuplan::MemoryInputs in;
  in.model = gpuplan::model_from_catalog("llama-3.1-70b");
  in.training.seq_len = 8192;
  in.training.micro_batch = 1;
  in.training.global_batch = 512;
  in.layout.gpus = 64;
  in.layout.tp = 8;
  in.layout.pp = 4;
  in.layout.zero = 1;
  in.layout.sequence_parallel = true;
  in.layout.recompute = gpuplan::Recompute::selective;
  in.overheads = gpuplan::default_overheads();
  in.capacity_bytes = 85'520'809'984;
  return in;
}

// One layout of a prepared job (its parameters counted once): the memory model of the layout, every stage.
void BM_MemoryEvaluation(benchmark::State& state) {
  const gpuplan::MemoryInputs in = llama70b_on_64();
  const gpuplan::memory::MemoryJob job(in);
  const gpuplan::Layout layout = gpuplan::resolve_layout(in);
  for (auto _ : state)
    benchmark::DoNotOptimize(gpuplan::memory::MemoryModel(job, layout)
                                 .report(gpuplan::memory::variant_of(layout, in.training.micro_batch), false));
}
BENCHMARK(BM_MemoryEvaluation);

// estimate_memory as a one-off call: resolve the layout, count the parameters, report.
void BM_EstimateMemory(benchmark::State& state) {
  const gpuplan::MemoryInputs in = llama70b_on_64();
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::estimate_memory(in));
}
BENCHMARK(BM_EstimateMemory);

// The same without recomputation, so that the caching allocator's reserve is replayed (docs/memory.md): each of the
// 4 stages for both data-parallel ranks (tp 8 x pp 4 x dp 2).
void BM_EstimateMemoryReplayed(benchmark::State& state) {
  gpuplan::MemoryInputs in = llama70b_on_64();
  in.layout.recompute = gpuplan::Recompute::none;
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::estimate_memory(in));
}
BENCHMARK(BM_EstimateMemoryReplayed)->Unit(benchmark::kMillisecond);

// Everything `gpuplan memory --json` does after parsing its options, in process: the request resolved (model from
// the catalog), the estimate, the fixes when it does not fit, and the JSON.
void BM_MemoryRunInProcess(benchmark::State& state) {
  gpuplan::api::MemoryRequest request;
  request.model.name_or_path = "llama-3.1-70b";
  request.training.seq_len = 8192;
  request.training.global_batch = 512;
  request.layout.gpus = 64;
  request.layout.tp = 8;
  request.layout.pp = 4;
  request.layout.zero = 1;
  request.layout.sequence_parallel = true;
  request.layout.recompute = "selective";
  request.hardware.gpu_memory = "40GB";  // does not fit: exercises the suggestions too
  request.all_stages = true;
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::api::to_json(gpuplan::api::run(request)).dump());
}
BENCHMARK(BM_MemoryRunInProcess)->Unit(benchmark::kMillisecond);

#ifdef GPUPLAN_BINARY
// The real program as a user runs it: process start, option parsing, catalog load, estimate, output.
void BM_MemoryCommandProcess(benchmark::State& state) {
  const char* argv[] = {GPUPLAN_BINARY, "memory", "--model", "llama-3.1-70b", "--gpus", "64", "--tp", "8", "--pp", "4",
                        "--seq-len", "8192", "--global-batch", "512", "--zero", "1", "--sequence-parallel",
                        "--recompute", "selective", "--gpu-memory", "40GB", "--json", nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  for (auto _ : state) {
    pid_t pid = 0;
    if (posix_spawn(&pid, GPUPLAN_BINARY, &actions, nullptr, const_cast<char**>(argv), environ) != 0) {
      state.SkipWithError("cannot start gpuplan");
      break;
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  posix_spawn_file_actions_destroy(&actions);
}
BENCHMARK(BM_MemoryCommandProcess)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
namespace {
void BM_CountParams(benchmark::State& state) {
  const auto m = gpuplan::model_from_catalog("llama-3.1-70b");
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::count_params(m));
}
BENCHMARK(BM_CountParams);
void BM_ResolveLayout(benchmark::State& state) {
  const gpuplan::MemoryInputs in = llama70b_on_64();
  for (auto _ : state) benchmark::DoNotOptimize(gpuplan::resolve_layout(in));
}
BENCHMARK(BM_ResolveLayout);
}  // namespace
