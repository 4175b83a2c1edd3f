// The search's evaluator. Memory mirrors src/memory/estimate.cpp term by term and in the same floating-point
// order (so the totals agree to the byte); time is estimate_step's (src/perf).
#include "search/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/error.hpp"

namespace gpuplan::search {

namespace {

bytes_t to_bytes(double value) {
  if (!(value >= 0) || value > 9.0e18)
    throw InputError("model and layout", "sizes whose byte count overflows 64 bits", "smaller sizes");
  return static_cast<bytes_t>(std::llround(value));
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
  tokens_step_ = static_cast<double>(in_.base.training.global_batch) * static_cast<double>(in_.base.training.seq_len);
  // estimate_step's inputs, prepared once: what `gpuplan estimate` builds for the same job.
  est_.memory = in_.base;
  est_.gpu = in_.gpu;
  est_.fabric = in_.fabric;
  est_.perf = in_.perf;
  prepare_estimate(est_);
  if (!(in_.gpu.memory_GBps > 0)) throw InputError("--gpu", in_.gpu.name, "a GPU with a memory bandwidth in the catalog");
  const bool fp8 = in_.base.training.precision == Precision::fp8 && in_.gpu.has_dtype("fp8");
  const char* dtype = fp8 ? "fp8" : to_string(in_.base.training.precision);
  if (!in_.gpu.has_dtype(dtype) || !(in_.gpu.tflops(dtype) > 0))
    throw InputError("--system", in_.gpu.name, fmt::format("a GPU with a dense {} peak in the catalog", dtype));
}

void Evaluator::prepare(Shape& s) const {
  MemoryInputs mi = in_.base;
  Layout& l = mi.layout;
  l = shape_layout(s);
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

void Evaluator::set_layout(EstimateInputs& est, const Shape& s, const Variant& v) const {
  est.memory.layout = layout_of(s, v);
  est.memory.training.micro_batch = v.micro_batch;
  est.time.tp_overlap = v.tp_overlap && s.tp > 1;
}

double Evaluator::step_lower_bound_s(const EstimateInputs& est) { return step_time_lower_bound_s(est); }

double Evaluator::variant_lower_bound_s(EstimateInputs& est, const Shape& s, std::int64_t micro_batch, bool sp,
                                        bool tp_overlap) const {
  // With ZeRO 0 and no offload the per-microbatch stage times hold no ZeRO-3 gathers or parameter streaming, so
  // every stage time (and with it the bubble) is at most that of any other ZeRO stage, offload or recomputation
  // of the same shape; the pipeline transfers, embedding synchronization and fixed overhead are the same for
  // all. The data-parallel and optimizer terms are the ones that another choice can make smaller.
  Variant v;
  v.micro_batch = micro_batch;
  v.sp = sp;
  v.tp_overlap = tp_overlap;
  set_layout(est, s, v);
  const perf::StepModel model(est);
  return variant_lower_bound_s(model);
}

double Evaluator::variant_lower_bound_s(const perf::StepModel& model) {
  Layout plain = model.layout();
  plain.zero = 0;
  plain.offload = Offload::none;
  plain.recompute = Recompute::none;
  plain.recompute_layers = -1;
  const StepEstimate e = model.time(plain);
  double bound = e.step_s;
  for (const auto& [name, t] : e.breakdown)
    if (name == "dp_comm" || name == "optimizer") bound -= t;
  return bound * (1.0 - 1e-9);   // rounding of the sums never lifts it above a step time
}

double Evaluator::cost_per_mtokens(const Shape& s, double step_s) const {
  if (!(in_.price_per_gpu_hour > 0)) return 0;
  return in_.price_per_gpu_hour * static_cast<double>(s.gpus) * step_s / 3600.0 / tokens_step_ * 1e6;
}

double Evaluator::score(const Shape& s, double step_s) const {
  switch (in_.objective) {
    case Objective::step_time: return step_s;
    case Objective::tokens_per_s: return step_s / tokens_step_;                 // seconds per token
    case Objective::cost: return static_cast<double>(s.gpus) * step_s / tokens_step_;   // GPU-seconds per token
  }
  return step_s;
}

Layout Evaluator::shape_layout(const Shape& s) const {
  Layout l = in_.base.layout;
  l.gpus = s.gpus;
  l.tp = s.tp;
  l.cp = s.cp;
  l.pp = s.pp;
  l.vpp = s.vpp;
  l.ep = s.ep;
  l.etp = s.etp;
  l.dp = s.dp;
  l.first_stage_layers = l.last_stage_layers = -1;
  return l;
}

Layout Evaluator::layout_of(const Shape& s, const Variant& v) const {
  Layout l = shape_layout(s);
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
