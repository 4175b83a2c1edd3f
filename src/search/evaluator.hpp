#pragma once
// The search's evaluator: the job prepared once (parameter counts, bytes per parameter, FLOPs per token, compute
// constants), then for each shape the memory model (src/memory/memory_model.hpp) and the step models of its
// micro-batches (src/perf/step_model.hpp). Every number the search ranks by is what estimate_memory and
// estimate_step give for the same layout, because they are the same models.
#include <cstdint>
#include <vector>

#include "gpuplan/estimate.hpp"
#include "gpuplan/plan.hpp"
#include "memory/memory_model.hpp"
#include "perf/step_model.hpp"

namespace gpuplan::search {

// One parallel shape: the degrees that fix which parameters and layers each rank holds.
struct Shape {
  std::int64_t gpus = 1, tp = 1, cp = 1, pp = 1, vpp = 1, ep = 1, etp = 1, dp = 1;
  CpComm cp_comm = CpComm::p2p;
  std::int64_t cp_a2a = 1;                                   // a2a+p2p: ranks of one all-to-all group
  std::int64_t layers_per_stage = 0;                       // the most layers a pipeline rank holds
  std::int64_t first_stage_layers = -1, last_stage_layers = -1;   // an uneven split (-1: even)
  std::uint32_t zero_offload_mask = ~0u;   // bit i: the framework runs the space's i-th ZeRO/offload choice here
};

// A choice of everything inside a shape: what changes memory, and TP communication overlap.
struct Variant : memory::MemoryVariant {
  bool tp_overlap = false;
};

class Evaluator {
 public:
  explicit Evaluator(const PlanInputs& inputs);
  Evaluator(const Evaluator&) = delete;  // the prepared models point into the inputs it holds
  Evaluator& operator=(const Evaluator&) = delete;

  const PlanInputs& inputs() const { return in_; }
  const ModelConfig& model() const { return *in_.base.model; }
  std::int64_t total_gpus() const { return gpus_; }
  bytes_t usable_bytes() const { return usable_; }

  // The memory model of a shape whose degrees are set (and valid).
  memory::MemoryModel memory_model(const Shape& shape) const;
  bool host_fits(const memory::MemoryPeak& peak) const;
  // What a peak needs of its tightest capacity, GPU memory, host memory or NVMe: above 1 does not fit.
  double fill_fraction(const memory::MemoryPeak& peak) const;

  // The inputs of estimate_step for this job (its compute constants resolved); set_layout points them at one
  // layout. The job's step facts, prepared once, for the step models.
  const EstimateInputs& estimate_inputs() const { return est_; }
  const perf::StepJob& step_job() const { return step_job_; }
  void set_layout(EstimateInputs& est, const Shape& shape, const Variant& v) const;
  // A lower bound on estimate_step's step time of the layout `est` holds (never above it).
  double step_lower_bound_s(const EstimateInputs& est) const;
  // A lower bound on estimate_step's step time of every layout of a shape and micro-batch with this sequence
  // parallelism and TP overlap, whatever its ZeRO stage, offload and recomputation: estimate_step of the layout
  // with ZeRO 0, no offload and no recomputation, less its data-parallel and optimizer terms (the only terms of
  // the step that can be smaller for another ZeRO stage or offload; recomputation only adds), from the step model
  // of any layout of that shape, micro-batch, sequence parallelism and overlap.
  static double variant_lower_bound_s(const perf::StepModel& model);
  double score(const Shape& shape, double step_s) const;    // the objective (smaller is better)
  double cost_per_mtokens(const Shape& shape, double step_s) const;   // dollars (0 without a price)

  Layout layout_of(const Shape& shape, const Variant& v) const;
  // The parallel degrees of a shape on the base layout (no variant applied yet).
  Layout shape_layout(const Shape& shape) const;
  std::int64_t microbatches(const Shape& shape, std::int64_t micro_batch) const {
    return in_.base.training.global_batch / (micro_batch * shape.dp);
  }

 private:
  PlanInputs in_;
  std::int64_t gpus_ = 0;
  bytes_t usable_ = 0;
  double tokens_step_ = 0;
  EstimateInputs est_;
  perf::StepJob step_job_;
  memory::MemoryJob memory_job_;
};

}  // namespace gpuplan::search
