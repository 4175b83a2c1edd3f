#pragma once
// The search's evaluator: memory and step time of a layout with arithmetic only. Everything that depends on the
// model, the sequence and the micro-batch alone is computed once; the memory part reproduces estimate_memory's
// worst-stage total exactly (tests/search_evaluator_test.cpp checks it on sampled layouts).
#include <cstdint>
#include <vector>

#include "gpuplan/plan.hpp"
#include "memory/internal.hpp"

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

  // Step time. `lower_bound_s` is a sum of a subset of its non-negative terms (compute, recompute and bubble).
  PlanTime time(const Shape& shape, const Variant& v) const;
  double time_lower_bound(const Shape& shape, std::int64_t micro_batch, Recompute recompute,
                          std::int64_t recompute_layers) const;
  double score(const Shape& shape, double step_s) const;    // the objective (smaller is better)

  Layout layout_of(const Shape& shape, const Variant& v) const;
  std::int64_t microbatches(const Shape& shape, std::int64_t micro_batch) const {
    return in_.base.training.global_batch / (micro_batch * shape.dp);
  }

 private:
  struct Group {
    double bw_GBps = 0;     // per rank, one way
    double step_latency_s = 0;
  };
  Group group(std::int64_t ranks, std::int64_t stride) const;
  static double ring_allreduce(const Group& g, std::int64_t n, double bytes);
  static double ring_gather(const Group& g, std::int64_t n, double bytes);   // allgather or reduce-scatter
  double compute_efficiency(const Shape& s, std::int64_t micro_batch) const;

  PlanInputs in_;
  std::int64_t gpus_ = 0;
  bytes_t usable_ = 0;
  ParamCounts counts_;
  memory::StateBytesPerParam sb_;
  double e_ = 2;                   // activation element bytes
  double peak_flops_ = 0;          // dense peak of the training dtype, FLOP/s
  double fwd_layer_flops_tok_ = 0; // forward FLOPs per token of one average decoder layer
  double fwd_attn_flops_tok_ = 0;  // of which attention scores/context (per layer)
  double fwd_head_flops_tok_ = 0;  // output layer
  double model_flops_step_ = 0;    // training FLOPs of one step (no recompute)
  double tokens_step_ = 0;
};

}  // namespace gpuplan::search
