// The step-time model in two phases. Everything fixed by a layout's shape (degrees, micro-batch, sequence
// parallelism, TP overlap, attention, precision) is priced once: per-layer compute, the TP/CP/EP/PP collectives,
// each stage's forward and backward. A variant of that shape (ZeRO stage, offload, recomputation) then costs one
// pass over the stages. estimate_step is StepModel(in).time(layout): a search that prices many variants of a
// shape gets exactly estimate_step's numbers.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "comm/group_collective.hpp"
#include "gpuplan/estimate.hpp"
#include "memory/internal.hpp"

namespace gpuplan::perf {

// collective_time_s with each group set up once: stages, buckets and layers price the same groups at many sizes.
// Nothing to move costs nothing (a dense model's expert gradients, a group of one).
class CommMemo {
 public:
  explicit CommMemo(const Fabric& f) : f_(&f) {}
  double operator()(Collective c, double bytes, const GroupPlacement& g);

 private:
  struct Entry {
    Collective c;
    std::int64_t ranks, ranks_per_node, concurrent;
    std::optional<comm::GroupCollective> group;
  };
  static constexpr int kSize = 12;
  const Fabric* f_;
  std::array<Entry, kSize> e_;
  int n_ = 0;
};

class StepModel {
 public:
  // Validates `in` as estimate_step does (InputError). `in` must outlive the model.
  explicit StepModel(const EstimateInputs& in);
  StepModel(const StepModel&) = delete;  // holds pointers into itself and into `in`
  StepModel& operator=(const StepModel&) = delete;
  // The step of the model's shape with `variant`'s ZeRO stage, offload, offload target and recomputation (its
  // other fields are ignored); no memory report. Not for concurrent use (it remembers collective prices).
  StepEstimate time(const Layout& variant) const;

  const Layout& layout() const { return l_; }
  const std::vector<memory::StageParams>& stages() const { return stages_; }

 private:
  // A stage's data-parallel collectives for one ZeRO family (0: all-reduce; 1-3: reduce-scatter + all-gather),
  // priced when a variant first needs them.
  struct DpCollectives {
    bool priced = false;
    double reduce = 0, reduce_bucket = 0, gather = 0, gather_bucket = 0;
  };
  struct Stage {
    double layers = 0, moe_layers = 0;
    double fwd = 0, bwd = 0;      // one microbatch, with the embedding or output layer
    double tp_first_last = 0;     // the embedding's and the loss's TP all-reduces
    double layer_kernels = 0, fwd_kernels = 0;
    mutable std::array<DpCollectives, 2> dp;
  };
  const DpCollectives& dp_collectives(std::size_t stage, int family) const;
  // A full gradient bucket's reduction and weight gather cost the same on every stage (-1: not priced yet).
  double bucket_time(Collective c, double bytes, double& full) const;

  const EstimateInputs* in_;     // its model and training setup; the time options are copied below
  bool tp_overlap_ = false, dp_overlap_ = true;
  double host_Bps_ = 0;          // host link per direction, at host_link_efficiency
  double host_sharers_ = 1;      // GPUs of a node whose offloaded optimizer steps share its CPUs
  Layout l_;
  RankPlacement place_;
  std::optional<ParamCounts> counted_;
  std::vector<memory::StageParams> stages_;
  std::optional<PerfConstants> loaded_;
  const PerfConstants* perf_ = nullptr;
  FlopsPerToken fpt_;
  double peak_tflops_ = 0, hbm_Bps_ = 0;
  double dense_f_ = 0, moe_f_ = 0, core_f_ = 0, layer_gemm_f_ = 0;
  double tp_layer_f_ = 0, cp_f_ = 0, cp_b_ = 0, ep_layer_f_ = 0;
  double mb_ = 0, v_ = 1, grad_bytes_ = 0, weight_bytes_ = 0, edp_ = 1;
  double pp_comm_ = 0, embed_sync_ = 0, width_ = 0;
  std::vector<Stage> base_;
  double bucket_bytes_ = 0;
  mutable CommMemo coll_;
  mutable double full_reduce_bucket_[2] = {-1, -1}, full_gather_bucket_ = -1;
};

}  // namespace gpuplan::perf
