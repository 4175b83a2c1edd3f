#pragma once
// The search's evaluator. Memory with arithmetic only: everything that depends on the model, the sequence and the
// micro-batch alone is computed once, and the worst-stage total reproduces estimate_memory's exactly
// (tests/search_evaluator_test.cpp checks it on sampled layouts). Step time is estimate_step's, on inputs prepared
// once (parameter counts, FLOPs per token, perf constants), with its lower bound for pruning.
#include <cstdint>
#include <vector>

#include "gpuplan/estimate.hpp"
#include "gpuplan/plan.hpp"
#include "memory/internal.hpp"
#include "perf/step_model.hpp"

namespace gpuplan::search {

// One parallel shape: the degrees that fix which parameters and layers each rank holds.
struct Shape {
  std::int64_t gpus = 1, tp = 1, cp = 1, pp = 1, vpp = 1, ep = 1, etp = 1, dp = 1;
  // Pipeline ranks whose memory can be the worst: the first rank of each group of ranks holding identical
  // parameters (later ranks of a group hold fewer in-flight microbatches, so never more memory).
  std::vector<std::int64_t> rep_index;
  std::vector<memory::StageParams> rep;
  double local_params = 0;        // parameters on stage 0 before ZeRO sharding (dense + expert)
  double local_dense = 0, local_expert = 0;
  int communicators = 0;
  std::int64_t layers_per_stage = 0;
  std::int64_t moe_layers_per_stage = 0;   // on the most loaded rank
};

// Activations of one representative stage for one (shape, micro-batch, sequence parallel, selective) choice,
// computed in exactly the order estimate_memory computes them.
struct StageActs {
  double a_dense = 0, a_moe = 0, a_ckpt = 0, embed = 0, head = 0, logits = 0;
};

// A choice of everything inside a shape.
struct Variant {
  std::int64_t micro_batch = 1;
  bool sp = false;
  bool tp_overlap = false;
  int zero = 0;
  Offload offload = Offload::none;
  OffloadTarget target = OffloadTarget::cpu;
  Recompute recompute = Recompute::none;
  std::int64_t recompute_layers = -1;      // full: layers recomputed per stage (-1: all)
};

struct MemoryResult {
  bytes_t total = 0;      // worst stage, as estimate_memory
  double host = 0;        // offloaded bytes per GPU (worst stage)
};

class Evaluator {
 public:
  explicit Evaluator(const PlanInputs& inputs);

  const PlanInputs& inputs() const { return in_; }
  const ModelConfig& model() const { return *in_.base.model; }
  std::int64_t total_gpus() const { return gpus_; }
  bytes_t usable_bytes() const { return usable_; }

  // Fills rep, communicators, ... of a shape whose degrees are set (and valid).
  void prepare(Shape& shape) const;
  // Activations of every representative stage.
  void stage_acts(const Shape& shape, std::int64_t micro_batch, bool sp, bool selective, std::vector<StageActs>& out) const;

  // Model states of stage 0 alone: a lower bound on the worst-stage total (activations and buffers are >= 0).
  double states_lower_bound(const Shape& shape, int zero, Offload offload) const;
  MemoryResult memory(const Shape& shape, const std::vector<StageActs>& acts, const Variant& v) const;
  bool host_fits(const MemoryResult& m, OffloadTarget target) const;

  // The inputs of estimate_step for this job, prepared once; set_layout points them at one layout.
  const EstimateInputs& estimate_inputs() const { return est_; }
  void set_layout(EstimateInputs& est, const Shape& shape, const Variant& v) const;
  // estimate_step's step time of the layout `est` holds, and a lower bound on it (never above it).
  static double step_s(const EstimateInputs& est) { return estimate_step_time(est).step_s; }
  static double step_lower_bound_s(const EstimateInputs& est);
  // A lower bound on estimate_step's step time of every layout of a shape and micro-batch with this sequence
  // parallelism and TP overlap, whatever its ZeRO stage, offload and recomputation: estimate_step of the layout
  // with ZeRO 0, no offload and no recomputation, less its data-parallel and optimizer terms (the only terms of
  // the step that can be smaller for another ZeRO stage or offload; recomputation only adds). Points `est` at
  // that layout.
  double variant_lower_bound_s(EstimateInputs& est, const Shape& shape, std::int64_t micro_batch, bool sp,
                               bool tp_overlap) const;
  // The same bound from the step model of any layout of that shape, micro-batch, sequence parallelism and overlap.
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
  ParamCounts counts_;
  memory::StateBytesPerParam sb_;
  double e_ = 2;                   // activation element bytes
  double tokens_step_ = 0;
  EstimateInputs est_;
};

}  // namespace gpuplan::search
