// The shape phase of the step-time model: per-layer compute, the TP/CP/EP/PP collectives and each stage's
// forward and backward for one microbatch, priced once for every variant of the shape. See docs/estimate.md.
#include <algorithm>

#include <fmt/format.h>

#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"
#include "model/param_parts.hpp"
#include "model/torchtitan_sac.hpp"
#include "perf/elementwise_ops.hpp"
#include "perf/layer_comm.hpp"
#include "perf/slowest_gpu.hpp"
#include "perf/step_model.hpp"

namespace gpuplan::perf {

const char* peak_dtype(const TrainingConfig& t, const GpuSpec& gpu) {
  switch (t.precision) {
    case Precision::fp32: return "fp32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return gpu.has_dtype("fp8") ? "fp8" : "bf16";
  }
  return "bf16";
}

double peak_tflops(const TrainingConfig& t, const GpuSpec& gpu) {
  const char* dtype = peak_dtype(t, gpu);
  const auto listed = gpu.dense_tflops.find(std::string_view(dtype));
  if (listed != gpu.dense_tflops.end()) return listed->second;
  std::string accepted;
  for (const char* precision : {"fp32", "fp16", "bf16", "fp8"})
    if (gpu.has_dtype(precision)) accepted += (accepted.empty() ? "" : ", ") + std::string(precision);
  const std::string precision = to_string(t.precision);
  const std::string runs_as = precision == dtype ? "" : fmt::format("it runs as {} there, and ", dtype);
  throw InputError("training.precision",
                   fmt::format("{} on {} ({}the catalog lists no dense {} peak for it)", precision, gpu.name,
                               runs_as, dtype),
                   accepted.empty() ? std::string("none: the GPU lists no training precision") : accepted);
}

double peak16_flops(const TrainingConfig& t, const GpuSpec& gpu) {
  return t.precision == Precision::fp8 ? gpu.tflops("bf16") * 1e12 : peak_tflops(t, gpu) * 1e12;
}

StepJob::StepJob(const EstimateInputs& in) : perf(in.perf ? *in.perf : perf_constants(in.gpu)) {
  if (!in.memory.model)
    throw InputError("model", "(none)",
                     "a model architecture: the step time is computed per operation, params alone is not enough");
  counts = count_params(*in.memory.model);
  flops = flops_per_token(*in.memory.model, in.memory.training.seq_len);
  if (in.memory.layout.framework == Framework::torchtitan)
    op_sac_recomputed_flops_per_token = detail::torchtitan_op_sac_recomputed_flops_per_token(*in.memory.model);
  // The job's own overlap configuration, where it states one, replaces the framework's default.
  if (in.time.tp_overlap_sms) perf.tp_overlap_reserved_sms = *in.time.tp_overlap_sms;
}

double CommMemo::operator()(Collective c, double bytes, const GroupPlacement& g) {
  if (!(bytes > 0) || g.ranks <= 1) return 0;
  const double slowdown = g.ranks_per_node >= g.ranks ? intra_slowdown_ : inter_slowdown_;
  return call_s_ + wire_s(c, bytes, g) * slowdown;
}

double CommMemo::wire_s(Collective c, double bytes, const GroupPlacement& g) {
  const comm::GroupCollective* same_group = nullptr;  // another collective on this group: its placement is set up
  for (int i = 0; i < used_; ++i) {
    const Entry& e = entries_[static_cast<std::size_t>(i)];
    if (e.ranks != g.ranks || e.ranks_per_node != g.ranks_per_node ||
        e.concurrent_groups != g.concurrent_groups_per_node)
      continue;
    if (e.collective == c) return e.group->time_s(bytes);
    same_group = &*e.group;
  }
  if (used_ == kCapacity) return collective_time_s(*fabric_, c, bytes, g);
  Entry& e = entries_[static_cast<std::size_t>(used_++)];  // set field by field: the group is large
  e.collective = c;
  e.ranks = g.ranks;
  e.ranks_per_node = g.ranks_per_node;
  e.concurrent_groups = g.concurrent_groups_per_node;
  if (same_group != nullptr) return e.group.emplace(*same_group, c).time_s(bytes);
  return e.group.emplace(*fabric_, c, g).time_s(bytes);
}

StepModel::StepModel(const EstimateInputs& in, const StepJob& job, ComputeMemo* compute_memo)
    : in_(&in), job_(&job), tp_overlap_(in.time.tp_overlap), dp_overlap_(in.time.dp_overlap),
      collective_(in.fabric, job.perf) {
  if (!in.memory.model)
    throw InputError("model", "(none)",
                     "a model architecture: the step time is computed per operation, params alone is not enough");
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  layout_ = resolve_layout(in.memory);
  const Layout& l = layout_;
  const std::int64_t gpus_per_node = std::max(1, in.fabric.gpus_per_node);
  const std::int64_t capacity = static_cast<std::int64_t>(gpus_per_node) * std::max(1, in.fabric.nodes);
  if (l.gpus > capacity)
    throw InputError("layout.gpus", fmt::format("{} (tp x pp x cp x dp)", l.gpus),
                     fmt::format("at most {} ({} x {} GPUs per node); add nodes or shrink the layout", capacity,
                                 format_quantity(std::max(1, in.fabric.nodes), "node", "nodes"), gpus_per_node));
  placement_ = place_ranks(l, static_cast<int>(gpus_per_node), parse_order(in.time.order));
  slowest_gpu_share_ = slowest_gpu_share(static_cast<double>(l.gpus), job.perf.gpu_speed_spread);
  // The GPUs of one host share its CPUs and drives: the node's, or one compute tray's where a node holds several.
  gpus_sharing_host_ = static_cast<double>(
      std::min(gpus_per_host(in.memory.node, gpus_per_node), std::max<std::int64_t>(1, l.gpus)));
  stages_ = compute_memo != nullptr ? compute_memo->stages(in.memory, l, job.counts)
                                    : memory::stage_params(in.memory, l, &job.counts);
  host_link_Bps_ = in.gpu.host_per_direction_GBps * 1e9 * job.perf.host_link_efficiency;
  // The node's drives serve all of its GPUs at once; each GPU's share then crosses its own host link.
  auto nvme_share = [&](double node_GBps) {
    const double share = node_GBps * 1e9 / gpus_sharing_host_;
    return host_link_Bps_ > 0 ? std::min(share, host_link_Bps_) : share;
  };
  nvme_read_Bps_ = nvme_share(in.memory.node.nvme_read_GBps);
  nvme_write_Bps_ = nvme_share(in.memory.node.nvme_write_GBps);
  const memory::StateBytesPerParam state_bytes = memory::state_bytes_per_param(tr, &m);
  offloaded_state_bytes_ = state_bytes.master + state_bytes.optimizer;

  Machine mc;
  peak_tflops_ = peak_tflops(tr, in.gpu);
  mc.peak_flops = peak_tflops_ * 1e12;
  mc.peak16_flops = peak16_flops(tr, in.gpu);
  mc.hbm_Bps = in.gpu.memory_GBps * 1e9;
  mc.constants = &job.perf;
  hbm_Bps_ = mc.hbm_Bps;
  if (!(mc.hbm_Bps > 0)) throw InputError("gpu", in.gpu.name, "a GPU with a memory bandwidth in the catalog");

  const MicrobatchShape s = microbatch_shape(in, l);

  const LayerCosts costs = price_compute(mc, s, compute_memo);
  // Microbatches per pipeline and step, as estimate_memory counts them.
  microbatches_ = static_cast<double>(microbatches_per_step(tr.global_batch, tr.micro_batch, l.dp));
  virtual_stages_ = static_cast<double>(l.schedule == PpSchedule::interleaved ? l.vpp : 1);
  gradient_bytes_ = gradient_element_bytes(tr, l.framework, l.zero);
  weight_bytes_ = weight_wire_bytes(tr);
  reduce_bytes_ = gradient_wire_bytes(tr, l);
  const bool megatron_ddp = runs_megatron_core(l.framework);
  grad_check_bytes_ = megatron_ddp && tr.grad_nan_check ? gradient_bytes_ : 0.0;
  const double etp = static_cast<double>(l.etp > 0 ? l.etp : l.tp);
  expert_data_parallel_ =
      std::max(1.0, static_cast<double>(l.dp) * static_cast<double>(l.cp) / static_cast<double>(l.ep) * (s.tp / etp));
  price_stages(s, costs);
  if (l.framework == Framework::torchtitan || l.framework == Framework::deepspeed)
    framework_dp_.resize(stages_.size());
}

StepModel::LayerCosts StepModel::price_compute(const Machine& mc, const MicrobatchShape& s, ComputeMemo* memo) {
  const ModelConfig& m = *in_->memory.model;
  const Layout& l = layout_;
  const std::int64_t etp_degree = l.etp > 0 ? l.etp : l.tp;
  const ComputeMemo::Key key{l.tp,           l.cp, static_cast<std::int64_t>(l.cp_comm), l.cp_a2a,
                             in_->memory.training.micro_batch, s.sequence_parallel ? 1 : 0, l.ep, etp_degree,
                             s.eager_elementwise ? 1 : 0};
  if (const ComputeMemo::Priced* known = memo != nullptr ? memo->find(key) : nullptr) {
    set_compute_fields(known->costs, known->attention_core);
    price_layer_comm(s, known->attention_core);
    return known->costs;
  }
  const double ep = static_cast<double>(l.ep);
  const double etp = static_cast<double>(etp_degree);
  LayerCosts costs;
  const Cost core = attention_core(mc, m, s);
  costs.dense = layer_body(mc, m, s, false, ep, etp);
  costs.dense += core;
  if (m.is_moe()) {
    costs.moe = layer_body(mc, m, s, true, ep, etp);
    costs.moe += core;
  }
  // Embedding (first stage) and output layer + loss (last stage).
  const double embedding_width = static_cast<double>(detail::embedding_width(m));
  const double vocab_per_rank = static_cast<double>(m.vocab) / s.tp;
  const double e = s.element_bytes;
  costs.embedding.forward_s = memory_bound_s(mc, 4 * s.tokens * s.hidden * e, 2);
  costs.embedding.backward_s = memory_bound_s(mc, vocab_per_rank * embedding_width * 4 + s.tokens * s.hidden * (e + 4), 2);
  const SixteenBit sixteen = sixteen_bit(mc, s);   // the output layer runs in 16 bits under fp8 too
  const Cost output = linear(sixteen.mc, sixteen.s, s.tokens, vocab_per_rank, embedding_width, 1);
  const ElementwisePasses norm = norm_passes(m.norm, s.eager_elementwise, e);
  const Cost loss = cross_entropy(mc, s.tokens * vocab_per_rank, e, in_->memory.training.loss);
  costs.head.forward_s =
      output.forward_s + memory_bound_s(mc, norm.forward_bytes * s.tokens * s.hidden, norm.forward_kernels) +
      loss.forward_s;
  costs.head.backward_s =
      output.backward_s + memory_bound_s(mc, norm.backward_bytes * s.tokens * s.hidden, norm.backward_kernels) +
      loss.backward_s;
  // Host dispatch: the framework issues every kernel from the CPU and the GPU runs behind it.
  costs.dense_kernels = layer_kernels_forward(m, s, false, l.tp > 1);
  costs.moe_kernels = m.is_moe() ? layer_kernels_forward(m, s, true, l.tp > 1) : costs.dense_kernels;
  if (l.framework == Framework::torchtitan) {
    // The replay runs the block's forward but for its kept mms and attention kernel.
    costs.dense_op_sac_replay_s =
        std::max(0.0, costs.dense.forward_s - core.forward_s - op_sac_kept_mm_forward_s(mc, m, s, false));
    if (m.is_moe())
      costs.moe_op_sac_replay_s =
          std::max(0.0, costs.moe.forward_s - core.forward_s - op_sac_kept_mm_forward_s(mc, m, s, true));
  }
  if (memo != nullptr) memo->add(key, {costs, core});
  set_compute_fields(costs, core);
  price_layer_comm(s, core);
  return costs;
}

void StepModel::set_compute_fields(const LayerCosts& costs, const Cost& attention_core) {
  dense_layer_forward_s_ = costs.dense.forward_s;
  moe_layer_forward_s_ = costs.moe.forward_s;
  attention_core_forward_s_ = attention_core.forward_s;
  dense_op_sac_replay_s_ = costs.dense_op_sac_replay_s;
  moe_op_sac_replay_s_ = costs.moe_op_sac_replay_s;
  layer_gemm_forward_s_ = costs.dense.gemm_forward_s;
  dense_row_parallel_forward_s_ = costs.dense.row_parallel_forward_s;
  moe_row_parallel_forward_s_ = costs.moe.row_parallel_forward_s;
  embedding_width_ = static_cast<double>(detail::embedding_width(*in_->memory.model));
}

const StepModel::ComputeMemo::Priced* StepModel::ComputeMemo::find(const Key& key) const {
  const auto it = priced_.find(key);
  return it == priced_.end() ? nullptr : &it->second;
}

void StepModel::ComputeMemo::add(const Key& key, const Priced& priced) { priced_.emplace(key, priced); }

const std::vector<memory::StageParams>& StepModel::ComputeMemo::stages(const MemoryInputs& in, const Layout& l,
                                                                       const ParamCounts& counts) {
  const StageKey key{l.tp, l.pp, l.vpp, l.ep, l.etp, l.first_stage_layers, l.last_stage_layers};
  auto it = stages_.find(key);
  if (it == stages_.end()) it = stages_.emplace(key, memory::stage_params(in, l, &counts)).first;
  return it->second;
}

void StepModel::price_layer_comm(const MicrobatchShape& s, const Cost& core) {
  const Layout& l = layout_;
  const LayerComm comm = layer_comm(*in_->memory.model, l, s, placement_, collective_);
  tp_forward_per_layer_s_ = comm.tp_forward_s;
  tp_backward_per_layer_s_ = comm.tp_backward_s;
  tp_backward_async_per_layer_s_ = comm.tp_backward_async_s;
  tp_moe_forward_per_layer_s_ = comm.tp_moe_forward_s;
  tp_moe_backward_per_layer_s_ = comm.tp_moe_backward_s + comm.tp_moe_backward_async_s;
  ep_comm_per_layer_s_ = comm.ep_per_layer_s;
  const CpExposed cp = cp_exposed(comm, core);
  cp_exposed_forward_s_ = cp.forward_s;
  cp_exposed_backward_s_ = cp.backward_s;
}

void StepModel::price_stages(const MicrobatchShape& s, const LayerCosts& costs) {
  const ModelConfig& m = *in_->memory.model;
  const Layout& l = layout_;
  CommMemo& coll = collective_;
  const double act_bytes = s.tokens * s.hidden * s.element_bytes;
  // Embedding: lookup (+ positions, dropout); output layer: GEMM, final norm, cross-entropy passes.
  const double embedding_kernels = 3, head_kernels = 1 + 1 + 3;
  stage_base_.resize(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const memory::StageParams& sp = stages_[i];
    StageBase& b = stage_base_[i];
    b.layers = static_cast<double>(sp.layers);
    b.moe_layers = static_cast<double>(sp.moe_layers);
    const double dense_layers = b.layers - b.moe_layers;
    b.forward_s = dense_layers * costs.dense.forward_s + b.moe_layers * costs.moe.forward_s;
    b.backward_s = dense_layers * costs.dense.backward_s + b.moe_layers * costs.moe.backward_s;
    if (sp.first) {
      b.forward_s += costs.embedding.forward_s;
      b.backward_s += costs.embedding.backward_s;
    }
    if (sp.last) {
      b.forward_s += costs.head.forward_s;
      b.backward_s += costs.head.backward_s;
    }
    // The vocabulary-parallel embedding all-reduces its output and the loss all-reduces three per-token scalars.
    if (l.tp > 1 && sp.first) b.tp_embedding_loss_s += coll(Collective::allreduce, act_bytes, placement_.tp);
    if (l.tp > 1 && sp.last) b.tp_embedding_loss_s += 3 * coll(Collective::allreduce, s.tokens * 4, placement_.tp);
    b.layer_kernels = dense_layers * costs.dense_kernels + b.moe_layers * costs.moe_kernels;
    b.forward_kernels = b.layer_kernels + (sp.first ? embedding_kernels : 0) + (sp.last ? head_kernels : 0);
  }
  const std::size_t p = stages_.size();
  pp_comm_s_ = pipeline_comm(s);
  if (p > 1 && m.tied_embeddings)
    embedding_sync_s_ = coll(Collective::allreduce,
                             static_cast<double>(m.vocab) / s.tp * embedding_width_ * gradient_bytes_, placement_.pp);
  sp_grad_sync_s_ = sp_grad_sync_s(s);
  // Buckets hold max(dp_bucket_elements, dp_bucket_elements_per_rank x the data x context ranks) gradient
  // elements, as Megatron-Core sizes them; the same byte count bounds the weight all-gather's.
  const double dp_ranks = static_cast<double>(placement_.dp.ranks);
  bucket_bytes_ = std::max(job_->perf.dp_bucket_elements, job_->perf.dp_bucket_elements_per_rank * dp_ranks) *
                  gradient_bytes_;
}

// The pipeline's transfers on the critical path (layer_comm.hpp): overlapped with the chunks beside them where
// Megatron-LM or NeMo run the interleaved schedule with overlap_p2p_comm, their default there; otherwise waited for.
double StepModel::pipeline_comm(const MicrobatchShape& s) {
  const double stages = static_cast<double>(stages_.size());
  const double transfer_s = pipeline_transfer_s(s, stages, placement_, collective_);
  if (!pipeline_overlaps(layout_, in_->time))
    return pipeline_comm_s(transfer_s, stages, microbatches_, virtual_stages_);
  double forward = 0, backward = 0;   // one chunk's compute, the mean over the stages
  for (const StageBase& b : stage_base_) {
    forward += b.forward_s;
    backward += b.backward_s;
  }
  const double chunks = stages * virtual_stages_;
  return overlapped_pipeline_comm_s(transfer_s, stages, microbatches_, virtual_stages_, forward / chunks,
                                    backward / chunks, job_->perf.overlap_slowdown);
}

// Under sequence parallelism each TP rank computes only its share of the sequence's contribution to the gradients
// of the weights every rank holds whole: the norms, the row-parallel linears' biases (added after the reduce-scatter;
// RowParallelLinear sets `sequence_parallel` on them), the routers (TopKRouter sets it on its weight) and MLA's down
// projections (TELinear 'duplicated'). Megatron-LM's finalize_model_grads
// (_allreduce_non_tensor_model_parallel_grads, formerly _allreduce_layernorm_grads) flattens these main gradients
// into one buffer, all-reduces it over the TP group and copies it back, after the backward and before the
// optimizer: a read and a write to flatten, the same to unflatten. Every stage does its own at once.
double StepModel::sp_grad_sync_s(const MicrobatchShape& s) {
  if (layout_.tp <= 1 || !s.sequence_parallel) return 0;
  const ModelConfig& m = *in_->memory.model;
  const ParamCounts& counts = job_->counts;
  double duplicated = (m.attn_out_bias ? s.hidden : 0);
  if (m.mla.enabled)
    duplicated += s.hidden * static_cast<double>(m.mla.q_lora_rank + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
  const double dense = static_cast<double>(counts.dense_layer.norms + counts.dense_layer.router) + duplicated +
                       (m.mlp_bias ? s.hidden : 0);
  const double moe = static_cast<double>(counts.moe_layer.norms + counts.moe_layer.router) + duplicated;
  const Machine mc = machine();
  double slowest = 0;
  for (const memory::StageParams& sp : stages_) {
    const double moe_layers = static_cast<double>(sp.moe_layers);
    const double elements = (static_cast<double>(sp.layers) - moe_layers) * dense + moe_layers * moe +
                            (sp.last ? static_cast<double>(counts.final_norm) : 0);
    const double bytes = elements * gradient_bytes_;
    slowest = std::max(slowest, collective_(Collective::allreduce, bytes, placement_.tp) +
                                    memory_bound_s(mc, 4 * bytes, 2));
  }
  return slowest;
}

// FSDP2, torchtitan's sharded data parallelism (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py), copies
// around each collective on the compute stream, where nothing hides them:
// - foreach_all_gather_copy_out makes the current stream wait for the all-gather, then its split_with_sizes_copy
//   moves the gathered parameters out of the all-gather buffer into the unsharded parameters: a read and a write of
//   every parameter of the rank's stage;
// - foreach_reduce's chunk_cat copies the unsharded gradients (in the parameters' dtype) into the reduce-scatter
//   buffer on the current stream, widening them to the reduce dtype (torchtitan's mixed_precision_reduce float32),
//   before the reduce-scatter stream waits for it.
// One kernel per FSDP unit (a transformer block) each. The copy into the all-gather buffer reads only the rank's
// shard, on a stream of its own, and is not priced.
void StepModel::fsdp2_copies(const memory::StageParams& sp, FrameworkDp& out) const {
  const Machine mc = machine();
  const double params = sp.dense + sp.expert;
  const double units = std::max<double>(1, static_cast<double>(sp.layers));
  out.gather_copy_s = memory_bound_s(mc, 2 * weight_bytes_ * params, units);
  out.reduce_copy_s = memory_bound_s(mc, (weight_bytes_ + gradient_bytes_) * params, units);
}

const StepModel::FrameworkDp& StepModel::framework_dp(std::size_t i) const {
  FrameworkDp& f = framework_dp_.at(i);
  if (f.priced) return f;
  if (layout_.framework == Framework::torchtitan) fsdp2_copies(stages_[i], f);
  if (layout_.framework == Framework::deepspeed) deepspeed_reduction(stages_[i], f);
  f.priced = true;
  return f;
}

double StepModel::bucket_time(Collective c, double bytes, double& full) const {
  if (bytes < bucket_bytes_) return collective_(c, bytes, placement_.dp);
  if (full < 0) full = collective_(c, bucket_bytes_, placement_.dp);
  return full;
}

const StepModel::DpCollectives& StepModel::dp_collectives(std::size_t i, int family) const {
  DpCollectives& d = stage_base_[i].dp[static_cast<std::size_t>(family)];
  if (d.priced) return d;
  const memory::StageParams& sp = stages_[i];
  // Stages holding the same parameters (the middle ones) move the same bytes.
  if (i > 0 && stages_[i - 1].dense == sp.dense && stages_[i - 1].expert == sp.expert) {
    d = dp_collectives(i - 1, family);
    return d;
  }
  const double g_dense = sp.dense * reduce_bytes_, g_expert = sp.expert * reduce_bytes_;
  const GatheredWeightBytes gathered = gathered_weight_bytes(in_->memory.training, layout_.framework, sp);
  const double w_dense = gathered.dense;
  CommMemo& coll = collective_;
  if (family == 0) {
    d.reduce_s = coll(Collective::allreduce, g_dense, placement_.dp) +
                 coll(Collective::allreduce, g_expert, placement_.edp);
    d.reduce_bucket_s = bucket_time(Collective::allreduce, g_dense, full_reduce_bucket_s_[0]);
  } else {
    // ZeRO-1/2 and the distributed optimizer: reduce-scatter the gradients, all-gather the updated weights.
    // ZeRO-3 reduce-scatters each microbatch's gradients and gathers the weights forward and backward.
    d.reduce_s = coll(Collective::reducescatter, g_dense, placement_.dp) +
                 coll(Collective::reducescatter, g_expert, placement_.edp);
    d.gather_s = coll(Collective::allgather, w_dense, placement_.dp) +
                 coll(Collective::allgather, gathered.expert, placement_.edp);
    d.reduce_bucket_s = bucket_time(Collective::reducescatter, g_dense, full_reduce_bucket_s_[1]);
    d.gather_bucket_s = bucket_time(Collective::allgather, w_dense, full_gather_bucket_s_);
  }
  d.priced = true;
  return d;
}

}  // namespace gpuplan::perf
