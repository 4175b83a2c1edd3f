// The search's evaluator. Memory mirrors src/memory/estimate.cpp term by term and in the same floating-point
// order (so the totals agree to the byte); time is the search's step-time model, documented in docs/plan.md.
#include "search/evaluator.hpp"

#include <algorithm>
#include <cmath>

#include "gpuplan/error.hpp"

namespace gpuplan::search {

namespace {

// GEMM efficiency: the fraction of the dense peak large transformer GEMMs reach (Megatron-LM reports 52-57% MFU
// on A100/H100 for 175B-class models including communication; GEMMs alone run near 70-75%).
constexpr double kPeakGemmEfficiency = 0.62;
// Per-rank GEMM work (tokens x hidden/tp elements) at which efficiency falls to half of its peak: small GEMMs
// under-fill the GPU (Narayanan et al. SC'21, fig. 13: throughput falls with small micro-batches and high TP).
constexpr double kHalfEfficiencyWork = 1.5e5;
// With TP communication overlap, this fraction of the TP collectives stays exposed (Megatron-LM/TE userbuffers
// hide most but not all of it; the rest costs SMs).
constexpr double kTpOverlapResidual = 0.15;
// Data-parallel collectives overlapped with compute likewise keep this fraction exposed (they share memory
// bandwidth and SMs with the GEMMs they hide behind).
constexpr double kDpOverlapResidual = 0.15;
// Host-side Adam (DeepSpeed CPUAdam, AVX-512): parameters updated per second by one node's CPUs.
constexpr double kCpuAdamParamsPerNode = 2.0e9;
// NVMe bandwidth of a node whose catalog entry states none.
constexpr double kDefaultNvmeGBps = 10.0;
// Fixed cost of one collective, and of one ring step inside / across nodes.
constexpr double kCollectiveBase_s = 8e-6;
constexpr double kStepIntra_s = 1.5e-6;
constexpr double kStepInter_s = 5e-6;

bytes_t to_bytes(double value) {
  if (!(value >= 0) || value > 9.0e18)
    throw InputError("model and layout", "sizes whose byte count overflows 64 bits", "smaller sizes");
  return static_cast<bytes_t>(std::llround(value));
}

const char* training_dtype(const GpuSpec& gpu, Precision p) {
  switch (p) {
    case Precision::fp8: return gpu.has_dtype("fp8") ? "fp8" : "bf16";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp32: return gpu.has_dtype("tf32") ? "tf32" : "fp32";
  }
  return "bf16";
}

}  // namespace

Evaluator::Evaluator(const PlanInputs& inputs) : in_(inputs) {
  if (!in_.base.model) throw InputError("--model", "(none)", "a model (the search needs its layers and heads)");
  gpus_ = in_.gpus > 0 ? in_.gpus : static_cast<std::int64_t>(in_.fabric.nodes) * in_.fabric.gpus_per_node;
  if (gpus_ < 1) throw InputError("--gpus", std::to_string(gpus_), "a positive GPU count");
  if (!(in_.memory_margin >= 0 && in_.memory_margin < 1))
    throw InputError("--memory-margin", std::to_string(in_.memory_margin), "a fraction in [0, 1)");
  usable_ = static_cast<bytes_t>(std::floor(static_cast<double>(in_.base.capacity_bytes) * (1.0 - in_.memory_margin)));
  const ModelConfig& m = *in_.base.model;
  counts_ = count_params(m);
  sb_ = memory::state_bytes_per_param(in_.base.training, &m);
  e_ = memory::activation_element_bytes(in_.base.training);
  const double tflops = in_.gpu.dense_tflops.empty() ? 0.0 : in_.gpu.tflops(training_dtype(in_.gpu, in_.base.training.precision));
  if (!(tflops > 0)) throw InputError("--system", in_.gpu.name, "a GPU with a dense peak for the training dtype");
  peak_flops_ = tflops * 1e12;
  const std::int64_t seq = in_.base.training.seq_len;
  const FlopsPerToken f = flops_per_token(m, seq);
  const double width = static_cast<double>(m.embed_proj_dim > 0 ? m.embed_proj_dim : m.hidden);
  fwd_head_flops_tok_ = 2.0 * static_cast<double>(m.vocab) * width;
  fwd_layer_flops_tok_ = (f.forward - fwd_head_flops_tok_) / static_cast<double>(m.layers);
  fwd_attn_flops_tok_ = f.attention_forward / static_cast<double>(m.layers);
  tokens_step_ = static_cast<double>(in_.base.training.global_batch) * static_cast<double>(seq);
  model_flops_step_ = f.training * tokens_step_;
}

void Evaluator::prepare(Shape& s) const {
  MemoryInputs mi = in_.base;
  Layout& l = mi.layout;
  l.gpus = s.gpus;
  l.tp = s.tp;
  l.cp = s.cp;
  l.pp = s.pp;
  l.vpp = s.vpp;
  l.ep = s.ep;
  l.etp = s.etp;
  l.dp = s.dp;
  l.first_stage_layers = l.last_stage_layers = -1;
  const auto stages = memory::stage_params(mi, l, &counts_);
  s.rep.clear();
  s.rep_index.clear();
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& a = stages[i];
    bool seen = false;
    for (const auto& b : s.rep)
      seen = seen || (a.layers == b.layers && a.moe_layers == b.moe_layers && a.dense == b.dense &&
                      a.expert == b.expert && a.largest_layer == b.largest_layer && a.embedding == b.embedding &&
                      a.first == b.first && a.last == b.last);
    if (!seen) {
      s.rep.push_back(a);
      s.rep_index.push_back(static_cast<std::int64_t>(i));
    }
  }
  s.local_dense = stages[0].dense;
  s.local_expert = stages[0].expert;
  s.local_params = stages[0].dense + stages[0].expert;
  s.layers_per_stage = stages[0].layers;
  s.moe_layers_per_stage = 0;
  for (const auto& st : stages) s.moe_layers_per_stage = std::max(s.moe_layers_per_stage, st.moe_layers);
  // Communicators, as estimate_memory counts them.
  const ModelConfig& m = model();
  int n = 0;
  for (std::int64_t size : {s.tp, s.pp, s.cp, s.dp, s.ep}) n += size > 1 ? 1 : 0;
  if (s.cp > 1 && s.dp > 1) ++n;
  if (m.is_moe()) {
    const std::int64_t expert_dp = s.gpus / (s.etp * s.ep * s.pp);
    if (expert_dp > 1 && expert_dp != s.dp) ++n;
    if (s.etp > 1 && s.etp != s.tp) ++n;
  }
  if (m.tied_embeddings && s.pp > 1) ++n;
  s.communicators = n;
}

void Evaluator::stage_acts(const Shape& s, std::int64_t micro_batch, bool sp, bool selective,
                           std::vector<StageActs>& out) const {
  const TrainingConfig& tr = in_.base.training;
  memory::ActivationContext ctx;
  ctx.model = &model();
  ctx.s = static_cast<double>(tr.seq_len / s.cp);
  ctx.s_kv = static_cast<double>(tr.seq_len);
  ctx.b = static_cast<double>(micro_batch);
  ctx.t = static_cast<double>(s.tp);
  ctx.etp = static_cast<double>(s.etp);
  ctx.sp = sp && s.tp > 1;
  ctx.e = e_;
  ctx.dropout = tr.dropout > 0;
  ctx.attention = in_.base.layout.attention;
  ctx.selective = selective;
  ctx.impl = in_.base.layout.impl;
  ctx.fp32_compute = tr.precision == Precision::fp32;
  out.resize(s.rep.size());
  for (std::size_t i = 0; i < s.rep.size(); ++i) {
    const memory::StageParams& sp_ = s.rep[i];
    StageActs& a = out[i];
    memory::Ledger act("activations", nullptr), lg("logits", nullptr);
    a.a_dense = memory::layer_activation_bytes(ctx, false, act);
    a.a_moe = sp_.moe_layers > 0 ? memory::layer_activation_bytes(ctx, true, act) : 0.0;
    a.a_ckpt = memory::checkpointed_layer_bytes(ctx, act);
    a.embed = sp_.first ? memory::embedding_activation_bytes(ctx, act) : 0.0;
    a.head = sp_.last ? memory::head_activation_bytes(ctx, act) : 0.0;
    a.logits = sp_.last ? memory::logits_bytes(ctx, tr, lg) : 0.0;
  }
}

double Evaluator::states_lower_bound(const Shape& s, int zero, Offload offload) const {
  const double d_dense = static_cast<double>(s.dp * s.cp);
  const double d_expert = static_cast<double>(s.gpus / (s.etp * s.ep * s.pp));
  auto local = [&](bool sharded) { return sharded ? s.local_dense / d_dense + s.local_expert / d_expert : s.local_params; };
  double bytes = offload == Offload::optimizer_and_params ? 0.0 : local(zero >= 3) * sb_.weights;
  if (offload == Offload::none) bytes += local(zero >= 1) * (sb_.master + sb_.optimizer) + local(zero >= 2) * sb_.gradients;
  if (in_.base.overheads.enabled) bytes += static_cast<double>(in_.base.overheads.cuda_context_bytes);
  return bytes;
}

MemoryResult Evaluator::memory(const Shape& s, const std::vector<StageActs>& acts, const Variant& v) const {
  const TrainingConfig& tr = in_.base.training;
  const ModelConfig& model = this->model();
  const Impl impl = in_.base.layout.impl;
  const bool interleaved = s.vpp > 1;
  const std::int64_t microbatches = tr.global_batch / (v.micro_batch * s.dp);
  const double d_dense = static_cast<double>(s.dp * s.cp);
  const double d_expert = static_cast<double>(s.gpus / (s.etp * s.ep * s.pp));
  const bool megatron = impl == Impl::megatron;
  const bool grads_persist = megatron || microbatches > 1 || s.pp > 1;
  const bool ctx_sp = v.sp && s.tp > 1;
  const double cs = static_cast<double>(tr.seq_len / s.cp), cb = static_cast<double>(v.micro_batch);
  const double ct = static_cast<double>(s.tp);
  MemoryResult best;
  bool first_rep = true;
  for (std::size_t i = 0; i < s.rep.size(); ++i) {
    const memory::StageParams& sp = s.rep[i];
    const StageActs& a = acts[i];
    const std::int64_t stage = s.rep_index[i];
    const std::int64_t in_flight = interleaved
                                       ? std::min(2 * (s.pp - stage - 1) + (s.vpp - 1) * s.pp + 1, microbatches * s.vpp)
                                       : std::min(s.pp - stage, microbatches);
    auto local = [&](double sharded) {
      return sharded > 0 ? sp.dense / d_dense + sp.expert / d_expert : sp.dense + sp.expert;
    };
    const double zero_w = v.zero >= 3 ? 1.0 : 0.0, zero_g = v.zero >= 2 ? 1.0 : 0.0, zero_o = v.zero >= 1 ? 1.0 : 0.0;
    const double p_weights = local(zero_w), p_grads = local(zero_g), p_opt = local(zero_o);
    double host = 0;
    double w = 0, mw = 0, gr = 0, os = 0;
    const bool offload_params = v.offload == Offload::optimizer_and_params;
    const bool offload_opt = v.offload != Offload::none;
    if (offload_params) host += p_weights * sb_.weights;
    else w = p_weights * sb_.weights;
    if (offload_opt) {
      host += p_opt * (sb_.master + sb_.optimizer) + p_grads * 4.0;
    } else {
      mw = p_opt * sb_.master;
      gr = p_grads * sb_.gradients;
      os = p_opt * sb_.optimizer;
    }

    const double layers = static_cast<double>(sp.layers);
    const double moe_layers = static_cast<double>(sp.moe_layers);
    const double per_layer_full = layers > 0 ? ((layers - moe_layers) * a.a_dense + moe_layers * a.a_moe) / layers : 0;
    double recomputed = 0;
    if (v.recompute == Recompute::full)
      recomputed = v.recompute_layers < 0 ? layers : std::min(layers, static_cast<double>(v.recompute_layers));
    const double per_microbatch_layers = (layers - recomputed) * per_layer_full + recomputed * a.a_ckpt;
    const double microbatch_units = interleaved ? static_cast<double>(in_flight) / static_cast<double>(s.vpp)
                                                : static_cast<double>(in_flight);
    const double stored = microbatch_units * (per_microbatch_layers + a.embed) + a.head;
    const double working = recomputed > 0 ? std::max(a.a_dense, a.a_moe) : 0.0;
    const double logits = a.logits;

    double comm = 0;
    const double tokens = cs * cb;
    const double h = static_cast<double>(model.hidden);
    const double seq_split = ctx_sp ? ct : 1.0;
    if (s.pp > 1) comm += 2.0 * e_ * tokens * h / seq_split;
    if (megatron && ctx_sp) comm += e_ * tokens * h;
    if (s.cp > 1) {
      const double kv = static_cast<double>(model.kv_heads * model.head_width());
      comm += 2.0 * 2.0 * e_ * tokens * kv / ct;
    }
    if (s.ep > 1 && sp.moe_layers > 0) comm += e_ * tokens * static_cast<double>(model.moe.top_k) * h;
    const double params_local = sp.dense + sp.expert;
    if (v.zero == 3) {
      const double unit = std::max(sp.largest_layer, sp.embedding);
      comm += 2.0 * unit * sb_.weights;
      comm += unit * sb_.gradients;
    } else if (!megatron && d_dense > 1) {
      if (v.zero == 0) {
        comm += params_local * sb_.gradients;
      } else {
        const double bucket = std::min(5e8, params_local) * 2.0;
        comm += bucket;
        comm += bucket;
      }
    }
    if (offload_opt && v.zero < 3 && megatron) comm += std::min(5e8, params_local) * 2.0;

    const double states_no_grad = w + mw + os;
    const double grads = gr;
    const double backward_temp = e_ * tokens * (2.0 * h + static_cast<double>(model.ffn_hidden) / ct);
    const double forward = states_no_grad + (grads_persist ? grads : 0.0) + stored + logits + comm;
    const double backward = states_no_grad + comm + working + backward_temp +
                            (grads_persist ? grads + stored + logits : std::max(stored + logits, grads));
    const bool adam_like = tr.optimizer == Optimizer::adam || tr.optimizer == Optimizer::adamw;
    const double opt_temp = (!megatron && adam_like && !offload_opt) ? p_opt * 4.0 : 0.0;
    const double optimizer = states_no_grad + grads + opt_temp + (v.zero == 3 ? 0.0 : comm);
    const double peak = std::max({forward, backward, optimizer});
    double rt = 0;
    if (in_.base.overheads.enabled) {
      rt += static_cast<double>(in_.base.overheads.cuda_context_bytes);
      rt += s.communicators * static_cast<double>(in_.base.overheads.nccl_per_communicator_bytes);
      rt += (in_.base.overheads.allocator_reserve_factor - 1.0) * peak;
    }
    const bytes_t total = to_bytes(peak + rt);
    if (first_rep || total > best.total) best.total = total;
    best.host = std::max(best.host, host);
    first_rep = false;
  }
  return best;
}

bool Evaluator::host_fits(const MemoryResult& m, OffloadTarget target) const {
  if (m.host <= 0) return true;
  const double per_node = m.host * static_cast<double>(std::max(1, in_.fabric.gpus_per_node));
  const double capacity = static_cast<double>(target == OffloadTarget::nvme ? in_.system.nvme_bytes
                                                                             : in_.system.host_memory_bytes);
  return capacity <= 0 || per_node <= capacity;   // unknown capacity: not a constraint
}

Evaluator::Group Evaluator::group(std::int64_t ranks, std::int64_t stride) const {
  const Fabric& f = in_.fabric;
  Group g;
  const std::int64_t per_node = std::max(1, f.gpus_per_node);
  const std::int64_t span = ranks * stride;               // consecutive GPUs the group is spread over
  const bool inter = span > per_node && ranks > 1;
  const std::int64_t domain = std::max(1, f.domain_size);
  if (!inter) {
    const bool nvlink = span <= domain && f.domain_per_gpu_GBps > 0;
    g.bw_GBps = f.intra.bus_GBps > 0 ? f.intra.bus_GBps : (nvlink ? f.domain_per_gpu_GBps : f.pcie_per_gpu_GBps);
    g.step_latency_s = f.intra.latency_us > 0 ? f.intra.latency_us * 1e-6 : kStepIntra_s;
  } else {
    // Every GPU of a node runs a group of the same kind at once, so each rank gets its share of the NICs.
    g.bw_GBps = f.inter.bus_GBps > 0 ? f.inter.bus_GBps : f.nic_per_gpu_GBps;
    g.step_latency_s = f.inter.latency_us > 0 ? f.inter.latency_us * 1e-6 : kStepInter_s;
  }
  if (!(g.bw_GBps > 0)) g.bw_GBps = 1.0;   // no link known: 1 GB/s, so such layouts rank last rather than fail
  return g;
}

double Evaluator::ring_allreduce(const Group& g, std::int64_t n, double bytes) {
  if (n <= 1 || bytes <= 0) return 0;
  const double nd = static_cast<double>(n);
  return kCollectiveBase_s + 2.0 * (nd - 1) * g.step_latency_s + 2.0 * (nd - 1) / nd * bytes / (g.bw_GBps * 1e9);
}

double Evaluator::ring_gather(const Group& g, std::int64_t n, double bytes) {
  if (n <= 1 || bytes <= 0) return 0;
  const double nd = static_cast<double>(n);
  return kCollectiveBase_s + (nd - 1) * g.step_latency_s + (nd - 1) / nd * bytes / (g.bw_GBps * 1e9);
}

double Evaluator::compute_efficiency(const Shape& s, std::int64_t micro_batch) const {
  const double work = static_cast<double>(micro_batch) *
                      static_cast<double>(in_.base.training.seq_len / s.cp) *
                      static_cast<double>(model().hidden) / static_cast<double>(s.tp);
  return kPeakGemmEfficiency * work / (work + kHalfEfficiencyWork);
}

double Evaluator::time_lower_bound(const Shape& s, std::int64_t micro_batch, Recompute recompute,
                                   std::int64_t recompute_layers) const {
  const double eff = compute_efficiency(s, micro_batch);
  const double rate = peak_flops_ * eff;
  const double tokens_rank = static_cast<double>(micro_batch) * static_cast<double>(in_.base.training.seq_len) /
                             static_cast<double>(s.tp * s.cp);
  const double lps = static_cast<double>(s.layers_per_stage);
  const double fwd = tokens_rank * (lps * fwd_layer_flops_tok_ + fwd_head_flops_tok_ / static_cast<double>(s.pp)) / rate;
  double re = 0;
  if (recompute == Recompute::full) {
    const double k = recompute_layers < 0 ? lps : std::min(lps, static_cast<double>(recompute_layers));
    re = tokens_rank * k * fwd_layer_flops_tok_ / rate;
  } else if (recompute == Recompute::selective) {
    re = tokens_rank * lps * fwd_attn_flops_tok_ / rate;
  }
  const double m = static_cast<double>(microbatches(s, micro_batch));
  const double fill = static_cast<double>(s.pp - 1) / static_cast<double>(s.vpp);
  return (m + fill) * (3.0 * fwd + re);
}

PlanTime Evaluator::time(const Shape& s, const Variant& v) const {
  const ModelConfig& model = this->model();
  const TrainingConfig& tr = in_.base.training;
  PlanTime t;
  const double eff = compute_efficiency(s, v.micro_batch);
  const double rate = peak_flops_ * eff;
  const double mb = static_cast<double>(v.micro_batch);
  const double seq_rank = static_cast<double>(tr.seq_len / s.cp);
  const double tokens_rank = mb * static_cast<double>(tr.seq_len) / static_cast<double>(s.tp * s.cp);
  const double lps = static_cast<double>(s.layers_per_stage);
  const double h = static_cast<double>(model.hidden);
  const double m = static_cast<double>(microbatches(s, v.micro_batch));

  // Compute of one microbatch on one pipeline rank.
  const double fwd = tokens_rank * (lps * fwd_layer_flops_tok_ + fwd_head_flops_tok_ / static_cast<double>(s.pp)) / rate;
  const double bwd = 2.0 * fwd;
  double recomputed_layers = 0, re = 0;
  if (v.recompute == Recompute::full) {
    recomputed_layers = v.recompute_layers < 0 ? lps : std::min(lps, static_cast<double>(v.recompute_layers));
    re = tokens_rank * recomputed_layers * fwd_layer_flops_tok_ / rate;
  } else if (v.recompute == Recompute::selective) {
    re = tokens_rank * lps * fwd_attn_flops_tok_ / rate;
  }

  // Placement, innermost first: tp, cp, ep (carved out of dp), dp, pp.
  const std::int64_t tp_stride = 1, cp_stride = s.tp, ep_stride = s.etp, dp_stride = s.tp * s.cp, pp_stride = s.gpus / s.pp;

  // Tensor parallel: 2 all-reduces (or all-gather + reduce-scatter pairs under SP) per layer forward, 2 backward,
  // 2 more per recomputed layer.
  double tp_c = 0;
  if (s.tp > 1) {
    const Group g = group(s.tp, tp_stride);
    const double x = mb * seq_rank * h * e_;
    const double one = v.sp ? 2.0 * ring_gather(g, s.tp, x) : ring_allreduce(g, s.tp, x);
    tp_c = (4.0 * lps + 2.0 * recomputed_layers) * one;
    // Userbuffers overlap needs peer-to-peer NVLink between the TP ranks; elsewhere it hides nothing.
    const bool nvlink = s.tp <= std::max(1, in_.fabric.domain_size) && in_.fabric.domain_per_gpu_GBps > 0 &&
                        s.tp <= std::max(1, in_.fabric.gpus_per_node);
    if (v.tp_overlap && nvlink) tp_c = std::max(kTpOverlapResidual * tp_c, tp_c - (fwd + bwd + re));
  }
  // Context parallel: ring exchange of K and V chunks, (cp-1) steps per layer, hidden behind attention.
  double cp_c = 0;
  if (s.cp > 1) {
    const Group g = group(s.cp, cp_stride);
    const double kv = static_cast<double>(model.kv_heads * model.head_width());
    const double chunk = 2.0 * mb * seq_rank * kv * e_ / static_cast<double>(std::min(s.tp, model.kv_heads));
    const double step = chunk / (g.bw_GBps * 1e9) + g.step_latency_s;
    const double attn = tokens_rank * fwd_attn_flops_tok_ / rate;
    cp_c = lps * 3.0 * std::max(0.0, static_cast<double>(s.cp - 1) * step - attn);
  }
  // Expert parallel: dispatch and combine all-to-alls, forward and backward, per MoE layer.
  double ep_c = 0;
  if (s.ep > 1 && s.moe_layers_per_stage > 0) {
    const Group g = group(s.ep, ep_stride);
    const double z = mb * seq_rank * static_cast<double>(model.moe.top_k) * h * e_ / static_cast<double>(s.tp);
    const double a2a = kCollectiveBase_s + static_cast<double>(s.ep - 1) / static_cast<double>(s.ep) * z / (g.bw_GBps * 1e9);
    ep_c = 4.0 * static_cast<double>(s.moe_layers_per_stage) * a2a;
  }
  // Pipeline: activations forward and gradients backward at each of the vpp chunk boundaries.
  double pp_c = 0;
  if (s.pp > 1) {
    const Group g = group(2, pp_stride);
    const double p = mb * seq_rank * h * e_ / ((v.sp && s.tp > 1) ? static_cast<double>(s.tp) : 1.0);
    pp_c = 2.0 * static_cast<double>(s.vpp) * (p / (g.bw_GBps * 1e9) + g.step_latency_s);
  }
  const double per_mb = fwd + bwd + re + tp_c + cp_c + ep_c + pp_c;
  const double fill = static_cast<double>(s.pp - 1) / static_cast<double>(s.vpp);

  // Data parallel over dp x cp ranks (dense) and the expert-data-parallel ranks (experts).
  const double d_dense = static_cast<double>(s.dp * s.cp);
  const std::int64_t n_dense = s.dp * s.cp;
  const std::int64_t n_expert = s.gpus / (s.etp * s.ep * s.pp);
  double dp_c = 0;
  auto collective = [&](bool gather, double dense_bytes, double expert_bytes) {
    double total = 0;
    if (n_dense > 1) {
      const Group g = group(n_dense, s.cp > 1 ? s.tp : dp_stride);
      total += gather ? ring_gather(g, n_dense, dense_bytes) : ring_allreduce(g, n_dense, dense_bytes);
    }
    if (n_expert > 1 && expert_bytes > 0) {
      const Group g = group(n_expert, s.etp * s.ep);
      total += gather ? ring_gather(g, n_expert, expert_bytes) : ring_allreduce(g, n_expert, expert_bytes);
    }
    return total;
  };
  const double grad_dense = s.local_dense * sb_.gradients, grad_expert = s.local_expert * sb_.gradients;
  const double w_dense = s.local_dense * sb_.weights, w_expert = s.local_expert * sb_.weights;
  auto hidden = [](double comm, double window) { return std::max(kDpOverlapResidual * comm, comm - window); };
  switch (v.zero) {
    case 0: dp_c = hidden(collective(false, grad_dense, grad_expert), bwd); break;
    case 1:
      dp_c = hidden(collective(true, grad_dense, grad_expert), bwd) + hidden(collective(true, w_dense, w_expert), fwd);
      break;
    case 2:
      dp_c = m * hidden(collective(true, grad_dense, grad_expert), bwd) + hidden(collective(true, w_dense, w_expert), fwd);
      break;
    default:
      dp_c = m * (hidden(collective(true, w_dense, w_expert), fwd) +
                  hidden(collective(true, w_dense, w_expert) + collective(true, grad_dense, grad_expert), bwd));
      break;
  }

  // Optimizer step and offload traffic.
  const double p_opt = v.zero >= 1 ? s.local_dense / d_dense +
                                          s.local_expert / static_cast<double>(std::max<std::int64_t>(1, n_expert))
                                    : s.local_params;
  double opt = 0, off = 0;
  if (v.offload == Offload::none) {
    const double bytes_touched = p_opt * (2.0 * (sb_.master + sb_.optimizer) + sb_.gradients + sb_.weights);
    opt = bytes_touched / (std::max(1.0, in_.gpu.memory_GBps) * 1e9);
  } else {
    const double per_node = p_opt * static_cast<double>(std::max(1, in_.fabric.gpus_per_node));
    opt = per_node / kCpuAdamParamsPerNode;
    const double host_bw = (in_.system.host_per_direction_GBps > 0 ? in_.system.host_per_direction_GBps : 16.0) * 1e9;
    off = p_opt * (4.0 + sb_.weights) / host_bw;
    if (v.target == OffloadTarget::nvme) {
      const double nvme = (in_.system.nvme_read_GBps > 0 ? in_.system.nvme_read_GBps : kDefaultNvmeGBps) * 1e9;
      off += 2.0 * per_node * (sb_.master + sb_.optimizer) / nvme;
    }
    if (v.offload == Offload::optimizer_and_params) {
      const double shard = p_opt * sb_.weights;
      off += m * std::max(0.0, 2.0 * shard / host_bw - (fwd + bwd));
    }
  }

  t.compute_s = m * (fwd + bwd);
  t.recompute_s = m * re;
  t.tp_comm_s = m * tp_c;
  t.cp_comm_s = m * cp_c;
  t.ep_comm_s = m * ep_c;
  t.pp_comm_s = m * pp_c;
  t.bubble_s = fill * per_mb;
  t.dp_comm_s = dp_c;
  t.optimizer_s = opt;
  t.offload_s = off;
  t.step_s = t.compute_s + t.recompute_s + t.tp_comm_s + t.cp_comm_s + t.ep_comm_s + t.pp_comm_s + t.bubble_s +
             t.dp_comm_s + t.optimizer_s + t.offload_s;
  t.tokens_per_s = tokens_step_ / t.step_s;
  t.mfu = model_flops_step_ / (static_cast<double>(s.gpus) * peak_flops_ * t.step_s);
  if (in_.price_per_gpu_hour > 0)
    t.cost_per_mtokens = in_.price_per_gpu_hour * static_cast<double>(s.gpus) * t.step_s / 3600.0 / tokens_step_ * 1e6;
  return t;
}

double Evaluator::score(const Shape& s, double step_s) const {
  switch (in_.objective) {
    case Objective::step_time: return step_s;
    case Objective::tokens_per_s: return step_s / tokens_step_;                 // seconds per token
    case Objective::cost: return static_cast<double>(s.gpus) * step_s / tokens_step_;   // GPU-seconds per token
  }
  return step_s;
}

Layout Evaluator::layout_of(const Shape& s, const Variant& v) const {
  Layout l = in_.base.layout;
  l.gpus = s.gpus;
  l.tp = s.tp;
  l.cp = s.cp;
  l.pp = s.pp;
  l.vpp = s.vpp;
  l.ep = s.ep;
  l.etp = s.etp;
  l.dp = s.dp;
  l.sequence_parallel = v.sp && s.tp > 1;
  l.zero = v.zero;
  l.recompute = v.recompute;
  l.recompute_layers = v.recompute == Recompute::full ? v.recompute_layers : -1;
  l.offload = v.offload;
  l.offload_target = v.offload == Offload::none ? OffloadTarget::cpu : v.target;
  l.schedule = s.vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
  l.first_stage_layers = l.last_stage_layers = -1;
  return l;
}

}  // namespace gpuplan::search
