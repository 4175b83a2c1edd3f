#pragma once
// Layout search: every way to lay a training job out on a cluster (TP x CP x PP x DP with EP/expert-TP carved out
// of the data-parallel GPUs, virtual pipeline stages, micro-batch, ZeRO stage, recompute, offload, sequence
// parallelism, TP communication overlap), evaluated for memory and step time with the models estimate_memory
// and estimate_step run (prepared once per job and shape), ranked, and explained. See docs/plan.md for the space, the pruning rules and why
// they never discard the optimum.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/comm.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"

namespace gpuplan {

enum class Objective { step_time, tokens_per_s, cost };
const char* to_string(Objective);

// Filters on the space. An empty list means every value the model and the GPU count allow.
struct SearchSpace {
  std::vector<std::int64_t> tp, pp, vpp, cp, ep, etp, dp, micro_batch;
  std::int64_t max_tp = 0, max_pp = 0, max_cp = 0, max_vpp = 0;   // 0: no limit
  std::vector<int> zero;                     // 0..3
  std::vector<Recompute> recompute;          // none, selective, full
  std::vector<CpComm> cp_comm;               // context-parallel exchanges (empty: each that applies)
  bool partial_recompute = true;             // full recompute of 1 .. layers-per-stage layers, not only all
  bool offload = true;                       // false: --no-offload
  std::vector<bool> sequence_parallel;       // {false, true} by default (true only with TP > 1)
  std::vector<bool> tp_overlap;              // {false, true} by default (true only with sequence parallelism)
};

struct PlanInputs {
  MemoryInputs base;                 // model, training setup (seq_len, global_batch, precision, ...), overheads,
                                     // capacity and margin; its layout supplies the fixed choices (attention
                                     // kernel, impl)
  GpuSpec gpu;                       // compute peaks and HBM bandwidth
  Fabric fabric;                     // links between the GPUs
  SystemSpec system;                 // host memory and NVMe of one node (offload capacity; 0: not a constraint)
  std::optional<PerfConstants> perf; // estimate_step's compute constants; empty: perf_constants(gpu)
  std::int64_t gpus = 0;             // 0: fabric.nodes x fabric.gpus_per_node
  SearchSpace space;
  Objective objective = Objective::step_time;
  double price_per_gpu_hour = 0;     // for Objective::cost (and the cost column)
  int top_k = 5;
  int threads = 0;                   // workers asked of the ParallelRunner (0: as many as it has cores)
  bool prune = true;                 // false: evaluate every layout in the space (for checking the pruning)
  bool explain = true;               // why_winner and sensitivity (a few constrained searches more)
};

struct Plan {
  Layout layout;                     // resolved (gpus, dp, etp filled)
  std::int64_t micro_batch = 1;
  std::int64_t microbatches = 1;     // per step, per pipeline
  bool tp_overlap = false;
  bytes_t memory_bytes = 0;          // worst-stage peak per GPU (estimate_memory's total)
  bytes_t usable_bytes = 0;          // capacity x (1 - margin)
  StepEstimate time;                 // estimate_step of the layout (step_s, breakdown, throughput, MFU)
  double score = 0;                  // the objective, smaller is better (seconds, s/token or GPU-s/token)
  double cost_per_mtokens = 0;       // dollars per million tokens (0 without a price)
  MemoryReport memory;               // estimate_memory with its terms (filled for the plans returned)
  // Layouts that differ only in ZeRO stage or offload and have exactly this step time and memory: the same plan.
  std::vector<Layout> equivalents;
};

struct Sensitivity {
  std::string change;                // "TP=16 (across nodes)"
  bool fits = false;
  double step_s = 0;                 // when it fits
  double delta = 0;                  // relative step time change vs the winner (+0.38 = 38% slower)
  bytes_t memory_bytes = 0;
  std::string note;                  // "needs 91.2 GB, 73.6 GB usable"
};

struct PlanResult {
  std::vector<Plan> plans;           // best first; the top k that fit
  std::vector<Plan> near_misses;     // when nothing fits: the layouts closest to fitting
  // Every layout of the space is either evaluated (its memory computed) or pruned by memory bounds:
  // space = evaluated + pruned_states. Every layout that fits is either timed (estimate_step) or pruned by the
  // time lower bound: feasible = timed + pruned_time.
  std::uint64_t space = 0;           // layouts in the space before pruning
  std::uint64_t evaluated = 0;       // layouts whose memory was computed
  std::uint64_t feasible = 0;        // evaluated layouts that fit
  std::uint64_t timed = 0;           // layouts whose step time was computed with estimate_step
  std::uint64_t pruned_states = 0;   // layouts skipped by memory bounds (states alone, recompute monotonicity)
  std::uint64_t pruned_time = 0;     // layouts that fit but whose step-time lower bound exceeds the k-th best
  double search_seconds = 0;
  std::vector<std::string> why_winner;      // why plans[0] beats plans[1], term by term
  std::vector<Sensitivity> sensitivity;     // the winner with one choice changed
};

// Progress: layouts accounted for so far (evaluated or pruned) out of `space`. Called from one thread, at most
// about ten times a second; may be empty.
using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t space)>;

// How the search runs its workers. The core runs them one after another; gpuplan_host's ThreadRunner runs them
// on threads. Any runner gives the same plans.
class ParallelRunner {
 public:
  virtual ~ParallelRunner() = default;
  // The workers to use when `requested` are asked for (0: as many as the runner has cores).
  virtual int workers(int requested) const = 0;
  // Calls work(0) ... work(workers - 1), possibly at once, and returns when all have returned.
  virtual void run(int workers, const std::function<void(int worker)>& work) const = 0;
};

// One worker, on the calling thread.
class SequentialRunner final : public ParallelRunner {
 public:
  int workers(int) const override { return 1; }
  void run(int workers, const std::function<void(int worker)>& work) const override {
    for (int i = 0; i < workers; ++i) work(i);
  }
};

// Throws InputError for inputs that admit no layout at all (no model, no global batch, bad filters). `runner`
// null: SequentialRunner.
PlanResult search_plans(const PlanInputs& inputs, ProgressCallback progress = {},
                        const ParallelRunner* runner = nullptr);

// The number of layouts in the space (exactly what search_plans reports as `space`), without evaluating them.
std::uint64_t count_space(const PlanInputs& inputs);

// Memory and step time of one layout exactly as the search ranks it (the prepared memory model and
// estimate_step). `layout` need not be resolved. Throws InputError when the layout violates a constraint.
Plan evaluate_layout(const PlanInputs& inputs, const Layout& layout, std::int64_t micro_batch, bool tp_overlap);

// The inputs of estimate_step for a plan: what `gpuplan estimate` with the plan's flags builds.
EstimateInputs plan_estimate_inputs(const PlanInputs& inputs, const Plan& plan);

// The layout flags that reproduce a plan with `gpuplan estimate` / `gpuplan memory`:
// "--tp 8 --pp 4 --dp 2 --micro-batch 1 --zero 1 --sequence-parallel ...".
std::string layout_flags(const Plan& plan);

// The MemoryInputs of a plan (base inputs with the plan's layout and micro-batch).
MemoryInputs plan_memory_inputs(const PlanInputs& inputs, const Plan& plan);

}  // namespace gpuplan

namespace gpuplan {

// GPU, fabric (fabric_from_cluster, as `gpuplan estimate --system`) and node description of a cluster; sets the
// capacity to the GPU's usable memory unless one is given.
void set_cluster(PlanInputs& inputs, const Cluster& cluster);

}  // namespace gpuplan
