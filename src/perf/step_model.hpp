// The step-time model in phases. A job (model, training setup, GPU) is prepared once: parameter counts, FLOPs
// per token, compute constants. Everything fixed by a layout's shape (degrees, micro-batch, sequence
// parallelism, TP overlap, attention, precision) is priced once per StepModel: per-layer compute, the TP/CP/EP/PP
// collectives, each stage's forward and backward. A variant of that shape (ZeRO stage, offload, recomputation)
// then costs one pass over the stages. estimate_step is StepModel(in, StepJob(in)).time(layout): a search that
// prices many variants of a shape gets exactly estimate_step's numbers.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <vector>

#include "comm/group_collective.hpp"
#include "gpuplan/estimate.hpp"
#include "memory/internal.hpp"
#include "perf/layer_cost.hpp"
#include "util/array_hash.hpp"

namespace gpuplan::perf {

// Exposed part of a collective overlapped with compute: what exceeds the compute, plus the compute it slows
// (overlap_slowdown of the hidden part: the SMs and HBM bandwidth the collective's kernels take).
inline double overlapped(double slowdown, double comm, double compute) {
  comm = std::max(0.0, comm);
  return std::max(0.0, comm - compute) + slowdown * std::min(comm, compute);
}

// Bytes per element as the data-parallel collectives move them: the weights (16-bit under mixed precision), and the
// gradients, in the dtype they accumulate in, except under DeepSpeed, which reduces in its communication_data_type,
// the model's 16-bit dtype by default (deepspeed/runtime/engine.py).
inline double weight_wire_bytes(const TrainingConfig& t) { return t.precision == Precision::fp32 ? 4.0 : 2.0; }
inline double gradient_wire_bytes(const TrainingConfig& t, const Layout& l) {
  return l.framework == Framework::deepspeed ? weight_wire_bytes(t) : gradient_element_bytes(t, l.framework, l.zero);
}

// The bytes the data-parallel all-gather moves of a stage's dense and expert weights. Under Megatron-LM's
// --fp8-param-gather the layers' Linear weights go as fp8, one byte each (experts are all Linear).
struct GatheredWeightBytes {
  double dense = 0, expert = 0;
};
inline GatheredWeightBytes gathered_weight_bytes(const TrainingConfig& t, Framework framework,
                                                 const memory::StageParams& sp) {
  const double weight = weight_wire_bytes(t);
  if (!(t.fp8_param_gather && t.precision == Precision::fp8 && runs_megatron_core(framework)))
    return {sp.dense * weight, sp.expert * weight};
  const double fp8_dense = std::max(0.0, sp.linear_weights - sp.expert);
  return {(sp.dense - fp8_dense) * weight + fp8_dense, sp.expert};
}

// The share of `params` elements a bucket of `bucket_elements` holds: what the last bucket's reduction leaves.
inline double last_bucket_share(double bucket_elements, double params) {
  return std::min(1.0, bucket_elements / std::max(1.0, params));
}

// What every layout of one job shares.
struct StepJob {
  explicit StepJob(const EstimateInputs& in);  // in.perf when given, else the GPU's constants from data/perf.json
  ParamCounts counts;
  FlopsPerToken flops;
  PerfConstants perf;
  // torchtitan's per-op checkpointing: the replay's mms and routed experts per token, over the model's layers
  // (0 for other frameworks); the model's alone, so once per job.
  double op_sac_recomputed_flops_per_token = 0;
};

// collective_time_s with each group set up once: stages, buckets and layers price the same groups at many sizes,
// plus the framework's cost of each call (`call_s`, data/perf.json collective_call_s). Nothing to move costs
// nothing (a dense model's expert gradients, a group of one).
class CommMemo {
 public:
  // `perf`: the framework's cost of each call (collective_call_s) and the calibrated communication efficiencies,
  // which slow each collective's wire time by its tier: a group inside one node by comm_intra_efficiency, a group
  // spanning nodes by comm_inter_efficiency.
  CommMemo(const Fabric& f, const PerfConstants& perf)
      : fabric_(&f), call_s_(perf.collective_call_s), intra_slowdown_(1 / perf.comm_intra_efficiency),
        inter_slowdown_(1 / perf.comm_inter_efficiency) {}
  double operator()(Collective c, double bytes, const GroupPlacement& g);

 private:
  double wire_s(Collective c, double bytes, const GroupPlacement& g);
  struct Entry {
    Collective collective;
    std::int64_t ranks, ranks_per_node, concurrent_groups;
    std::optional<comm::GroupCollective> group;
  };
  static constexpr int kCapacity = 12;
  const Fabric* fabric_;
  double call_s_ = 0;
  double intra_slowdown_, inter_slowdown_;
  std::array<Entry, kCapacity> entries_;
  int used_ = 0;
};

class StepModel {
 public:
  class ComputeMemo;
  // Validates `in` as estimate_step does (InputError). `in` and `job` must outlive the model. `compute_memo`
  // (optional) holds the per-layer compute of step models built before from the same job.
  StepModel(const EstimateInputs& in, const StepJob& job, ComputeMemo* compute_memo = nullptr);
  StepModel(const StepModel&) = delete;  // holds pointers into itself and into `in`
  StepModel& operator=(const StepModel&) = delete;
  // The step of the model's shape with `variant`'s ZeRO stage, offload, offload target and recomputation (its
  // other fields are ignored); no memory report. Not for concurrent use (it remembers collective prices).
  StepEstimate time(const Layout& variant) const;

  const Layout& layout() const { return layout_; }
  const std::vector<memory::StageParams>& stages() const { return stages_; }

 private:
  // A stage's data-parallel collectives for one ZeRO family (0: all-reduce; 1-3: reduce-scatter + all-gather),
  // priced when a variant first needs them.
  struct DpCollectives {
    bool priced = false;
    double reduce_s = 0, reduce_bucket_s = 0, gather_s = 0, gather_bucket_s = 0;
  };
  // What a framework adds around its data-parallel collectives, per stage and priced on first use; none for
  // Megatron-LM and NeMo (framework_dp_ stays empty).
  struct FrameworkDp {
    bool priced = false;
    // torchtitan: FSDP2's copies out of each all-gather's buffer and into each reduce-scatter's, on the compute
    // stream (step_model.cpp fsdp2_copies).
    double gather_copy_s = 0, reduce_copy_s = 0;
    // DeepSpeed below ZeRO-3 (deepspeed_data_parallel.cpp): the gradients' copies into the buckets (compute
    // stream), what the reduction stream then runs (copies and all-reduces), the last bucket's share of it.
    double bucket_copy_s = 0, reduction_s = 0, last_bucket_share = 1;
    // DeepSpeed without ZeRO: the flattening, scaling and copying back around its all-reduce, and the
    // BF16_Optimizer's accumulation of each microbatch's bf16 gradients into its fp32 ones.
    double fallback_copy_s = 0, hp_accumulate_s = 0;
  };
  // One stage, one microbatch: what no ZeRO stage, offload or recomputation changes.
  struct StageBase {
    double layers = 0, moe_layers = 0;
    double forward_s = 0, backward_s = 0;   // with the embedding or the output layer
    double tp_embedding_loss_s = 0;         // the embedding's and the loss's TP all-reduces
    double layer_kernels = 0, forward_kernels = 0;
    mutable std::array<DpCollectives, 2> dp;
  };
  // The exposed time of one stage and one microbatch, by term.
  struct StageTime {
    double forward = 0, backward = 0, recompute = 0, tp = 0, cp = 0, ep = 0, zero3 = 0, offload = 0, nvme = 0;
    double host = 0;
    double total() const { return forward + backward + recompute + tp + cp + ep + zero3 + offload + nvme + host; }
  };
  // The compute of one microbatch by piece, and the kernels the host launches for a layer.
  struct LayerCosts {
    Cost dense, moe, embedding, head;
    double dense_kernels = 0, moe_kernels = 0;
    // torchtitan's op-level checkpointing: one layer's forward less what it keeps (the replay in its backward).
    double dense_op_sac_replay_s = 0, moe_op_sac_replay_s = 0;
  };
  // What the stages add up to, across the step.
  struct StepTotals {
    double slowest_s = 0, sum_s = 0;   // the slowest stage's time per microbatch, and the sum over stages
    double backward_sum_s = 0;         // backward and recompute of the stages so far
    StageTime slowest;
    double dp_exposed_s = 0, optimizer_s = 0, offload_step_s = 0, nvme_step_s = 0;
    double recomputed_layers = 0;      // summed over the stages (for HFU)
    // A stage's data-parallel time after its last backward. Stage i finishes that backward about i backward
    // passes before stage 0 does, so the stages before it hide that much.
    void expose_dp(double exposed_s) { dp_exposed_s = std::max(dp_exposed_s, exposed_s - backward_sum_s); }
  };

  LayerCosts price_compute(const Machine& mc, const MicrobatchShape& s, ComputeMemo* memo);
  void set_compute_fields(const LayerCosts& costs, const Cost& attention_core);
  double row_parallel_sm_margin_s(double layers, double moe_layers) const;
  void price_layer_comm(const MicrobatchShape& s, const Cost& attention_core);
  void price_stages(const MicrobatchShape& s, const LayerCosts& costs);
  double sp_grad_sync_s(const MicrobatchShape& s);
  double pipeline_comm(const MicrobatchShape& s);
  const DpCollectives& dp_collectives(std::size_t stage, int family) const;
  // The GPU as the per-stage terms price memory-bound work on it: the training dtype's peak, HBM, the constants.
  Machine machine() const { return Machine{peak_tflops_ * 1e12, hbm_Bps_, &job_->perf}; }
  const FrameworkDp& framework_dp(std::size_t stage) const;
  void fsdp2_copies(const memory::StageParams& sp, FrameworkDp& out) const;
  void deepspeed_reduction(const memory::StageParams& sp, FrameworkDp& out) const;
  void add_deepspeed_data_parallel(std::size_t stage, const Layout& variant, StageTime& st, StepTotals& totals) const;
  void add_deepspeed_allreduce(std::size_t stage, StepTotals& totals) const;
  // A full gradient bucket's reduction and weight gather cost the same on every stage (-1: not priced yet).
  double bucket_time(Collective c, double bytes, double& full) const;
  StageTime stage_time(std::size_t stage, const Layout& variant, double& recomputed_layers) const;
  void add_data_parallel(std::size_t stage, const Layout& variant, StageTime& st, StepTotals& totals) const;
  double zero3_last_reduce_share(std::size_t stage) const;
  void add_optimizer(std::size_t stage, const Layout& variant, StageTime& st, StepTotals& totals) const;
  void add_nvme_traffic(const Layout& variant, double shard, StageTime& st,
                        StepTotals& totals) const;
  StepEstimate assemble(const StepTotals& totals, const Layout& variant) const;

  const EstimateInputs* in_;     // its model and training setup; the time options are copied below
  const StepJob* job_;
  bool tp_overlap_ = false, dp_overlap_ = true;
  double host_link_Bps_ = 0;     // host link per direction, at host_link_efficiency
  double gpus_sharing_host_ = 1; // GPUs of a host whose offloaded optimizer steps share its CPUs
  double nvme_read_Bps_ = 0, nvme_write_Bps_ = 0;   // one GPU's share of the node's NVMe, at most its host link
  double offloaded_state_bytes_ = 0;  // fp32 master copy and optimizer moments per parameter (ZeRO-Infinity's
                                      // swapped states)
  Layout layout_;
  RankPlacement placement_;
  std::vector<memory::StageParams> stages_;
  mutable std::vector<FrameworkDp> framework_dp_;   // per stage, under torchtitan and DeepSpeed
  double peak_tflops_ = 0, hbm_Bps_ = 0;
  // One microbatch, one layer, forward (the backward is derived per stage).
  double dense_layer_forward_s_ = 0, moe_layer_forward_s_ = 0, attention_core_forward_s_ = 0;
  // --recompute selective under torchtitan is its op-level checkpointing (model/torchtitan_sac.hpp).
  double dense_op_sac_replay_s_ = 0, moe_op_sac_replay_s_ = 0;
  double layer_gemm_forward_s_ = 0;            // a dense layer's GEMMs: what TP communication overlaps with
  double dense_row_parallel_forward_s_ = 0, moe_row_parallel_forward_s_ = 0;   // Cost::row_parallel_forward_s
  double tp_forward_per_layer_s_ = 0;          // the TP collectives of one layer's forward
  double tp_backward_per_layer_s_ = 0;         // the backward's the GEMMs wait for
  double tp_backward_async_per_layer_s_ = 0;   // the backward's issued beside the column-parallel GEMMs
  double tp_moe_forward_per_layer_s_ = 0, tp_moe_backward_per_layer_s_ = 0;   // a MoE layer's (LayerComm::tp_moe_*)
  double cp_exposed_forward_s_ = 0, cp_exposed_backward_s_ = 0;   // CP ring steps not hidden by the attention
  double ep_comm_per_layer_s_ = 0;             // a MoE layer's dispatch and combine all-to-alls, forward
  double microbatches_ = 0;                    // per pipeline and step
  double virtual_stages_ = 1;                  // model chunks per pipeline rank (interleaved schedule)
  // Per element, as accumulated and gathered. gradient_bytes_ is the layout's; only DeepSpeed's differs between
  // ZeRO stages (gradient_dtype), and its terms, like the optimizer's, take the variant's stage.
  double gradient_bytes_ = 0, weight_bytes_ = 0;
  double reduce_bytes_ = 0;                        // per gradient element reduced (gradient_wire_bytes)
  double grad_check_bytes_ = 0;                    // per gradient element held, read by the NaN check each step
  double expert_data_parallel_ = 1;            // ranks that shard the expert states
  double pp_comm_s_ = 0, embedding_sync_s_ = 0, embedding_width_ = 0;
  double sp_grad_sync_s_ = 0;                  // the TP all-reduce of the weights sequence parallelism duplicates
  double slowest_gpu_share_ = 0;               // of the GPU time, what waiting for the slowest GPU adds
  std::vector<StageBase> stage_base_;
  double bucket_bytes_ = 0;
  mutable CommMemo collective_;
  mutable double full_reduce_bucket_s_[2] = {-1, -1}, full_gather_bucket_s_ = -1;
};

// The per-layer compute of one microbatch (GEMMs, attention core, memory-bound kernels, embedding and output
// layer) depends on the job and on TP, CP, micro-batch, sequence parallelism, EP and ETP only. A search's layouts
// that differ in pipeline, data parallelism or variant share it: one memo per search worker prices it once per
// such shape. Not for concurrent use; every step model given one must come from the same job.
class StepModel::ComputeMemo {
 public:
  struct Priced {
    LayerCosts costs;
    Cost attention_core;
  };
  // tp, cp, cp comm type, cp_a2a, micro-batch, sequence parallelism, ep, etp, eager elementwise ops
  using Key = std::array<std::int64_t, 9>;
  const Priced* find(const Key& key) const;
  void add(const Key& key, const Priced& priced);
  std::size_t size() const { return priced_.size(); }
  // What each pipeline stage holds (memory::stage_params), which depends on TP, PP, VPP, EP, ETP and the split
  // only: the step models of one shape's micro-batches and sequence-parallel choices share it.
  const std::vector<memory::StageParams>& stages(const MemoryInputs& in, const Layout& layout, const ParamCounts& counts);

 private:
  using StageKey = std::array<std::int64_t, 7>;
  std::unordered_map<Key, Priced, detail::ArrayHash> priced_;
  std::unordered_map<StageKey, std::vector<memory::StageParams>, detail::ArrayHash> stages_;
};

// step_time_lower_bound_s with the job's constants.
double step_time_lower_bound_s(const EstimateInputs& in, const PerfConstants& perf);

// The dtype whose dense peak MFU divides by: the training precision's (fp8 falls back to bf16 on GPUs without it).
const char* peak_dtype(const TrainingConfig& training, const GpuSpec& gpu);
// The dense peak of peak_dtype in TFLOP/s. A GPU without one (bf16 on a V100) is an error of the precision asked
// for (field training.precision), naming the precisions the GPU has.
double peak_tflops(const TrainingConfig& training, const GpuSpec& gpu);
// The peak of the work that stays in 16 bits under fp8 (layer_cost.hpp, SixteenBit), in FLOP/s.
double peak16_flops(const TrainingConfig& training, const GpuSpec& gpu);

}  // namespace gpuplan::perf
