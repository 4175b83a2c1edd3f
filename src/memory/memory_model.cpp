// Assembles the per-rank memory of every pipeline stage: model states after TP/PP/EP division and ZeRO sharding,
// activations held by the in-flight microbatches, logits, communication buffers and runtime overheads, and takes
// the peak over the phases of a step (forward end, backward, optimizer step).
#include "memory/memory_model.hpp"
#include "memory/activations_common.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "gpuplan/error.hpp"
#include "model/torchtitan_sac.hpp"

namespace gpuplan::memory {

namespace {

bytes_t to_bytes(double value) {
  if (!(value >= 0) || value > 9.0e18)
    throw InputError("model and layout", "sizes whose byte count overflows 64 bits", "smaller sizes");
  return static_cast<bytes_t>(value + 0.5);  // non-negative: rounds half up without a libm call
}

int count_communicators(const Layout& l, const ModelConfig* m) {
  int n = 0;
  for (std::int64_t size : {l.tp, l.pp, l.cp, l.dp, l.ep}) n += size > 1 ? 1 : 0;
  if (l.cp > 1 && l.dp > 1) ++n;                                 // Megatron's combined data x context group
  if (m != nullptr && m->is_moe()) {
    const std::int64_t expert_dp = l.gpus / (l.etp * l.ep * l.pp);
    if (expert_dp > 1 && expert_dp != l.dp) ++n;
    if (l.etp > 1 && l.etp != l.tp) ++n;
  }
  if (m != nullptr && m->tied_embeddings && l.pp > 1) ++n;       // embedding-sync group of first and last stage
  return n;
}

bool same_parameters(const StageParams& a, const StageParams& b) {
  return a.layers == b.layers && a.moe_layers == b.moe_layers && a.dense == b.dense && a.expert == b.expert &&
         a.largest_layer == b.largest_layer && a.largest_weight == b.largest_weight && a.embedding == b.embedding && a.first == b.first && a.last == b.last;
}

}  // namespace

MemoryJob::MemoryJob(const MemoryInputs& in)
    : inputs(&in),
      model(in.model ? &*in.model : nullptr),
      counts(model != nullptr ? count_params(*model) : ParamCounts{}),
      state_bytes(state_bytes_per_param(in.training, model)),
      element_bytes(activation_element_bytes(in.training)),
      params_total(model != nullptr ? static_cast<double>(counts.total) : in.params) {}

MemoryVariant variant_of(const Layout& l, std::int64_t micro_batch) {
  MemoryVariant v;
  v.micro_batch = micro_batch;
  v.sequence_parallel = l.sequence_parallel;
  v.zero = l.zero;
  v.offload = l.offload;
  v.offload_target = l.offload_target;
  v.recompute = l.recompute;
  v.recompute_layers = l.recompute_layers;
  return v;
}

MemoryModel::MemoryModel(const MemoryJob& job, const Layout& shape)
    : MemoryModel(job, shape, stage_params(*job.inputs, shape, job.model != nullptr ? &job.counts : nullptr)) {}

MemoryModel::MemoryModel(const MemoryJob& job, const Layout& shape, std::vector<StageParams> stages)
    : job_(&job),
      shape_(shape),
      stages_(std::move(stages)),
      communicators_(count_communicators(shape, job.model)),
      dense_sharding_(static_cast<double>(shape.dp * shape.cp)),   // context-parallel ranks join the sharding group
      expert_sharding_(static_cast<double>(shape.gpus / (shape.etp * shape.ep * shape.pp))) {
  candidate_worst_.reserve(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const bool seen = std::any_of(candidate_worst_.begin(), candidate_worst_.end(),
                                  [&](std::size_t j) { return same_parameters(stages_[i], stages_[j]); });
    if (!seen) candidate_worst_.push_back(i);
  }
}

std::int64_t MemoryModel::microbatches(std::int64_t micro_batch) const {
  return microbatches_per_step(job_->inputs->training.global_batch, micro_batch, shape_.dp);
}

ActivationContext MemoryModel::context(std::int64_t micro_batch, bool sequence_parallel, bool selective) const {
  const TrainingConfig& tr = job_->inputs->training;
  ActivationContext ctx;
  ctx.model = job_->model;
  if (job_->model != nullptr) ctx.vocab = static_cast<double>(padded_vocab(job_->model->vocab, tr, shape_));
  ctx.seq_local = static_cast<double>(tr.seq_len / shape_.cp);
  ctx.keys_per_query = static_cast<double>(tr.seq_len);
  ctx.micro_batch = static_cast<double>(micro_batch);
  ctx.tp = static_cast<double>(shape_.tp);
  ctx.cp = static_cast<double>(shape_.cp);
  ctx.cp_comm = shape_.cp_comm;
  ctx.cp_a2a = static_cast<double>(shape_.cp_a2a);
  ctx.etp = static_cast<double>(shape_.etp);
  ctx.sequence_parallel = sequence_parallel && shape_.tp > 1;
  ctx.element_bytes = job_->element_bytes;
  // Transformer Engine's Linear, LayerNormLinear and LayerNormMLP save the fp8-cast input of each GEMM for the
  // weight gradient (transformer_engine/pytorch/module/linear.py, layernorm_linear.py, layernorm_mlp.py): the
  // norm inputs and the fc1 output keep their 16 bits.
  ctx.gemm_input_bytes = te_fp8() ? 1.0 : job_->element_bytes;
  ctx.dropout = tr.dropout > 0;
  ctx.attention = shape_.attention;
  ctx.selective = selective;
  ctx.op_sac = detail::torchtitan_op_sac(shape_.framework, selective ? Recompute::selective : Recompute::none);
  ctx.ep = static_cast<double>(shape_.ep);
  ctx.impl = shape_.impl;
  ctx.fp32_compute = tr.precision == Precision::fp32;
  ctx.routed_share = routed_share(tr);
  ctx.probs_in_activation = tr.megatron_version >= kMegatronProbsInActivationVersion;
  return ctx;
}

ActivationTable MemoryModel::activations(std::int64_t micro_batch, bool sequence_parallel, bool selective) const {
  ActivationTable a;
  a.microbatches = microbatches(micro_batch);
  if (job_->model == nullptr) return a;
  const ActivationContext ctx = context(micro_batch, sequence_parallel, selective);
  Ledger ignored("activations", nullptr);
  a.dense_layer = layer_activation_bytes(ctx, false, ignored);
  a.moe_layer = job_->model->is_moe() ? layer_activation_bytes(ctx, true, ignored) : 0.0;
  a.checkpointed_layer = checkpointed_layer_bytes(ctx, ignored);
  if (ctx.op_sac) {
    // What a layer's backward rebuilds: everything it did not keep.
    ActivationContext whole = ctx;
    whole.op_sac = false;
    a.rebuilt_layer = layer_activation_bytes(whole, false, ignored) - a.dense_layer;
    if (job_->model->is_moe())
      a.rebuilt_layer = std::max(a.rebuilt_layer, layer_activation_bytes(whole, true, ignored) - a.moe_layer);
  }
  a.embedding = embedding_activation_bytes(ctx, ignored);
  a.head = head_activation_bytes(ctx, ignored);
  a.logits = logits_bytes(ctx, job_->inputs->training, ignored);
  add_microbatch_buffers(ctx, a);
  return a;
}

// Buffers every stage allocates for one microbatch's activations, and the backward's temporaries.
void MemoryModel::add_microbatch_buffers(const ActivationContext& ctx, ActivationTable& a) const {
  const ModelConfig& model = *job_->model;
  const Layout& l = shape_;
  const double e = job_->element_bytes;
  const double tokens = ctx.seq_local * ctx.micro_batch;
  const double h = static_cast<double>(model.hidden);
  const double seq_split = ctx.sequence_parallel ? ctx.tp : 1.0;
  if (l.pp > 1) a.pipeline_buffers = 2.0 * e * tokens * h / seq_split;
  if (l.impl == Impl::megatron && ctx.sequence_parallel) a.sequence_parallel_buffer = e * tokens * h;
  if (l.cp > 1 && l.impl != Impl::megatron) {
    const double kv = static_cast<double>(model.kv_heads * model.head_width());
    a.context_parallel_buffers = 2.0 * 2.0 * e * tokens * kv / ctx.tp;
  }
  if (l.ep > 1) a.expert_dispatch_buffer = e * tokens * static_cast<double>(model.moe.top_k) * h;
  if (l.impl != Impl::megatron) {
    a.backward_temp = e * tokens * (2.0 * h + static_cast<double>(model.ffn_hidden) / ctx.tp);
    return;
  }
  a.backward_temp = megatron_layer_backward_bytes(ctx);
  if (l.cp > 1) add_context_parallel_transients(ctx, static_cast<double>(l.cp), a);
  Ledger ignored("backward phase", nullptr);
  a.output_backward = output_backward_bytes(ctx, job_->inputs->training, ignored);
  a.embedding_backward = e * ctx.vocab / ctx.tp * h;
}

// The buffers Transformer Engine's context-parallel attention holds inside one layer beyond what it saves
// (dot_product_attention/context_parallel.py), by --cp-comm-type. q, kv, o: the local query, key + value and output.
//   p2p (AttnFuncWithCPAndKVP2P): forward holds every K/V chunk it received and each step's output until it
//     returns (the last rank of the ring keeps cp outputs of the local query's size); backward exchanges K/V and
//     their gradients in two send/receive pairs beside the query gradients of the whole and of one step.
//   a2a (AttnFuncWithCPAndQKVOA2A): around each all-to-all a repacked copy and a reordered copy of the tensor;
//     forward keeps the caller's Q, K, V and the repacked ones until it returns; backward does the same for the
//     query, key and value gradients beside the attention backward's own.
//   all_gather (AttnFuncWithCPAndKVAllGather): the whole sequence's K and V and a reordered copy forward; backward
//     gathers them again and builds whole-sequence K/V gradients, each call's share and a reordered copy.
//   a2a+p2p: the all-to-all's copies of the caller's tensors, then the ring over cp / cp_a2a ranks.
void MemoryModel::add_context_parallel_transients(const ActivationContext& ctx, double cp, ActivationTable& a) const {
  const Shapes x = shapes_of(ctx);
  const double e = job_->element_bytes;
  const double q = e * x.tokens * x.q_width / ctx.tp;
  const double o = e * x.tokens * x.v_width / ctx.tp;
  const double kv = e * x.tokens * (x.kv_width + (x.mla ? x.v_width : x.kv_width)) / ctx.tp;
  const double logsumexp = 4.0 * x.tokens * x.heads / ctx.tp;
  const double attention_backward = a.backward_temp;   // the widest of the layer's own backward (incl. dQ, dK, dV)
  switch (ctx.cp_comm) {
    case CpComm::p2p:
      a.context_parallel_forward = (cp - 1) * kv + cp * (q + logsumexp);
      a.context_parallel_backward = 4 * kv + 3 * q + logsumexp / 2;
      return;
    case CpComm::a2a:
      a.context_parallel_forward = 2 * (q + kv) + q;
      a.context_parallel_backward = attention_backward + 2 * (q + kv);
      return;
    case CpComm::all_gather:
      a.context_parallel_forward = 2 * cp * kv;
      a.context_parallel_backward = attention_backward + 3 * cp * kv;
      return;
    case CpComm::a2a_p2p: {
      const double ring = cp / ctx.cp_a2a;
      a.context_parallel_forward = (q + kv) + (ring - 1) * kv + ring * (q + logsumexp);
      a.context_parallel_backward = std::max(4 * kv + 3 * q + logsumexp / 2 + 2 * o, attention_backward + 2 * (q + kv));
      return;
    }
  }
}

bool MemoryModel::te_fp8() const {
  return job_->inputs->training.precision == Precision::fp8 && shape_.impl == Impl::megatron &&
         shape_.framework != Framework::torchtitan;
}

MemoryPeak MemoryModel::peak(const ActivationTable& acts, const MemoryVariant& v) const {
  MemoryPeak worst;
  for (std::size_t i : candidate_worst_) {
    const StageBytes b = stage_bytes<false>(i, acts, v, nullptr);
    worst.total = std::max(worst.total, to_bytes(b.peak + b.runtime));
    const bool nvme = v.offload_target == OffloadTarget::nvme;
    worst.host_bytes = std::max(worst.host_bytes, (nvme ? 0.0 : b.offloaded) + b.host_buffers);
    worst.nvme_bytes = std::max(worst.nvme_bytes, nvme ? b.offloaded : 0.0);
  }
  return worst;
}

MemoryReport MemoryModel::report(const MemoryVariant& v, bool explain, bool replay) const {
  const MemoryInputs& in = *job_->inputs;
  MemoryReport r;
  r.gpus = shape_.gpus;
  r.dp = shape_.dp;
  r.capacity_bytes = in.capacity_bytes;
  r.activations_known = job_->model != nullptr;
  r.params_total = job_->params_total;
  r.microbatches = microbatches(v.micro_batch);
  if (job_->model != nullptr) r.vocab_padded = padded_vocab(job_->model->vocab, in.training, shape_);
  const bool selective = v.recompute == Recompute::selective;
  const ActivationTable acts = activations(v.micro_batch, v.sequence_parallel, selective);
  const ActivationContext ctx = context(v.micro_batch, v.sequence_parallel, selective);
  r.stages.resize(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    StageMemory& st = r.stages[i];
    const Explanation recording{&st.terms, &ctx};
    StageBytes b = explain ? stage_bytes<true>(i, acts, v, &recording) : stage_bytes<false>(i, acts, v, nullptr);
    if (replay && replayable(v)) use_replayed_reserve(i, acts, v, b, st.terms);
    st.stage = static_cast<std::int64_t>(i);
    st.layers = stages_[i].layers;
    st.in_flight = b.in_flight;
    st.weights = to_bytes(b.weights);
    st.master_weights = to_bytes(b.master);
    st.gradients = to_bytes(b.gradients);
    st.optimizer_states = to_bytes(b.optimizer);
    st.activations = to_bytes(b.activations);
    st.logits = to_bytes(b.logits);
    st.comm_buffers = to_bytes(b.comm);
    st.runtime = to_bytes(b.runtime);
    st.wgrad_buffers = to_bytes(b.wgrad_buffers);
    st.allocated_peak = to_bytes(b.peak);
    st.reserved_peak = to_bytes(b.peak + b.reserve);
    st.outside_torch = to_bytes(b.outside_torch);
    st.forward_peak = to_bytes(b.forward + b.runtime);
    st.backward_peak = to_bytes(b.backward + b.runtime);
    st.optimizer_peak = to_bytes(b.optimizer_step + b.runtime);
    st.total = to_bytes(b.peak + b.runtime);
    st.peak_phase = b.peak == b.forward ? "forward end" : (b.peak == b.backward ? "backward" : "optimizer step");
    (v.offload_target == OffloadTarget::nvme ? st.nvme : st.host) = to_bytes(b.offloaded);
    st.host_buffers = to_bytes(b.host_buffers);
  }
  r.worst_stage = 0;
  for (std::size_t i = 1; i < r.stages.size(); ++i)
    if (r.stages[i].total > r.worst().total) r.worst_stage = static_cast<std::int64_t>(i);
  r.usable_bytes = usable_memory(r.capacity_bytes, in.memory_margin);
  r.gpu_fits = r.capacity_bytes > 0 && r.worst().total <= r.usable_bytes;
  double host = 0, nvme = 0;   // the most any stage keeps there per GPU: a node may hold ranks of every stage
  for (const StageMemory& st : r.stages) {
    host = std::max(host, static_cast<double>(st.host + st.host_buffers));
    nvme = std::max(nvme, static_cast<double>(st.nvme));
  }
  r.host = check_node_storage(host, in.node, shape_.gpus, in.node.host_memory_bytes);
  r.nvme = check_node_storage(nvme, in.node, shape_.gpus, in.node.nvme_bytes);
  r.fits = r.gpu_fits && r.host.fits && r.nvme.fits;
  return r;
}

double MemoryModel::states_lower_bound(int zero, Offload offload) const {
  const StageParams& first = stages_.front();
  const StateBytesPerParam& sb = job_->state_bytes;
  auto local = [&](bool sharded) {
    return sharded ? first.dense / dense_sharding_ + first.expert / expert_sharding_ : first.dense + first.expert;
  };
  double bytes = offload == Offload::optimizer_and_params ? 0.0 : local(zero >= 3) * sb.weights;
  // fp8 parameters (--fp8-param-gather) may take fewer bytes than 16-bit ones: the bound takes what they take.
  if (job_->inputs->training.fp8_param_gather)
    bytes -= fp8_linear_weights(first, zero, offload) * std::max(0.0, sb.weights - fp8_weight_bytes());
  if (offload == Offload::none) bytes += local(zero >= 1) * (sb.master + sb.optimizer) + local(zero >= 2) * gradient_element_bytes(job_->inputs->training, shape_.framework, zero);
  if (job_->inputs->overheads.enabled) bytes += static_cast<double>(job_->inputs->overheads.cuda_context_bytes);
  return bytes;
}

}  // namespace gpuplan::memory

namespace gpuplan {

StorageCheck check_node_storage(double per_gpu_bytes, const NodeStorage& node, std::int64_t job_gpus,
                                bytes_t capacity_bytes) {
  StorageCheck c;
  c.per_gpu_bytes = memory::to_bytes(per_gpu_bytes);
  // Unknown GPUs per node: nothing per node is known (0).
  c.gpus_per_node = node.gpus_per_node > 0 ? std::max<std::int64_t>(1, std::min(node.gpus_per_node, job_gpus)) : 0;
  c.needed_per_node_bytes = memory::to_bytes(per_gpu_bytes * static_cast<double>(c.gpus_per_node));
  c.capacity_per_node_bytes = capacity_bytes;
  c.checked = per_gpu_bytes > 0 && capacity_bytes > 0 && node.gpus_per_node > 0;
  c.fits = !c.checked || c.needed_per_node_bytes <= capacity_bytes;
  return c;
}

bytes_t usable_memory(bytes_t capacity_bytes, double memory_margin) {
  return static_cast<bytes_t>(std::floor(static_cast<double>(capacity_bytes) * (1.0 - memory_margin)));
}

}  // namespace gpuplan
