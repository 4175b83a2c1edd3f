// Step time of a training iteration: per-operation compute (GEMM roofline with shape-dependent efficiency,
// memory-bound kernels from bytes over HBM bandwidth), every collective priced on the tier its group spans,
// pipeline schedule, data-parallel overlap, optimizer step and offload. See docs/estimate.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "memory/internal.hpp"
#include "perf/step_model.hpp"
#include "model/param_parts.hpp"

namespace gpuplan {

namespace {

// Per-GPU machine numbers used by the kernels' cost functions.
struct Machine {
  double peak = 0;        // FLOP/s of the training dtype
  double hbm = 0;         // bytes/s
  const PerfConstants* c = nullptr;
};

// ceil(x) for x >= 0 without a libm call (this is the innermost arithmetic of a search); doubles from 2^52 up
// are whole already.
double ceil_nonneg(double x) {
  if (!(x < 4.5e15)) return x;
  const double t = static_cast<double>(static_cast<std::int64_t>(x));
  return t < x ? t + 1 : t;
}

// One GEMM (or `batch` independent GEMMs in one kernel) of M x N x K: a smooth roofline over compute and operand
// traffic, with the compute side derated by the dense peak fraction and by wave quantization over the SMs.
// `out_bytes` is the traffic per output element: a write of elem_bytes, or a read and a write of the fp32 gradient
// when a weight-gradient GEMM accumulates into it.
double gemm_s(const Machine& mc, double m, double n, double k, double batch, double elem_bytes, double out_bytes) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const PerfConstants& c = *mc.c;
  const double flops = 2 * m * n * k * batch;
  const double tiles = ceil_nonneg(m / c.gemm_tile_m) * ceil_nonneg(n / c.gemm_tile_n) * batch;
  const double waves = ceil_nonneg(tiles / c.sm_count);
  const double wave_util = tiles / (waves * c.sm_count);
  const double tc = flops / (mc.peak * c.gemm_max_efficiency * wave_util);
  const double tm = (elem_bytes * (m * k + k * n) + out_bytes * m * n) * batch / (mc.hbm * c.gemm_memory_efficiency);
  const double p = c.roofline_sharpness;
  const double t = p == 1   ? tc + tm
                   : p == 2 ? std::sqrt(tc * tc + tm * tm)
                            : std::pow(std::pow(tc, p) + std::pow(tm, p), 1 / p);
  return t + c.kernel_overhead_s;
}
double gemm_s(const Machine& mc, double m, double n, double k, double batch, double elem_bytes) {
  return gemm_s(mc, m, n, k, batch, elem_bytes, elem_bytes);
}

// `kernels` bandwidth-bound kernels moving `bytes` in all.
double mem_s(const Machine& mc, double bytes, double kernels) {
  if (bytes <= 0) return 0;
  return bytes / (mc.hbm * mc.c->memory_bound_efficiency) + kernels * mc.c->kernel_overhead_s;
}

// Forward and backward time of one piece of work for one microbatch on one rank.
struct Cost {
  double f = 0;
  double b = 0;
  double gemm_f = 0;  // the linear-layer GEMMs of f: what TP communication can overlap with
  Cost& operator+=(const Cost& o) {
    f += o.f;
    b += o.b;
    gemm_f += o.gemm_f;
    return *this;
  }
};

struct Shapes {
  double tokens = 0;      // b x s / cp on this rank
  double s_kv = 0;        // keys per query
  double b = 0;
  double s_loc = 0;
  double h = 0;
  double tp = 1;
  double e = 2;           // bytes of an activation element
  double ge = 2;          // bytes of a GEMM operand element (1 under fp8)
  double acc = 8;         // bytes moved per weight-gradient element: read and write of the (fp32) main gradient
  bool sp = false;
  bool dropout = false;
  bool flash = true;
};

// Attention core (scores, softmax, context) of one layer.
Cost attention_core(const Machine& mc, const ModelConfig& m, const Shapes& s) {
  const double heads = static_cast<double>(m.heads) / s.tp;
  const double qk = static_cast<double>(detail::qk_head_dim(m));
  const double v = static_cast<double>(detail::v_head_dim(m));
  Cost c;
  if (s.flash) {
    // Causal kernels skip the masked half of the s x s product; the backward recomputes the scores (2.5x FLOPs).
    // A kernel call sees the whole sequence; under context parallelism one ring step (cp calls), on chunks of
    // s / (2 cp) tokens: Megatron-LM splits the sequence into 2 cp chunks and gives rank i chunks i and 2cp-1-i
    // to balance the causal work (get_batch_on_this_cp_rank). Short chunks fill the GPU less.
    const double flops = 2 * s.tokens * s.s_kv * heads * (qk + v) * 0.5;
    const double keys = s.s_loc < s.s_kv ? s.s_loc / 2 : s.s_loc;
    const double efficiency = mc.c->flash_attention_efficiency * keys / (keys + mc.c->flash_attention_half_length);
    const double t = flops / (mc.peak * efficiency);
    const double calls = s.s_kv / s.s_loc;
    c.f = t + calls * mc.c->kernel_overhead_s;
    c.b = 2.5 * t + 2 * calls * mc.c->kernel_overhead_s;
    return c;
  }
  const double bh = s.b * heads;
  c.f = gemm_s(mc, s.s_loc, s.s_kv, qk, bh, s.ge) + gemm_s(mc, s.s_loc, v, s.s_kv, bh, s.ge);
  // Fused scale-mask-softmax reads and writes the scores; dropout on the probabilities adds a pass and a mask.
  const double scores = bh * s.s_loc * s.s_kv;
  double bytes = scores * 2 * s.e;
  double kernels = 1;
  if (s.dropout) {
    bytes += scores * (2 * s.e + 1);
    kernels += 1;
  }
  c.f += mem_s(mc, bytes, kernels);
  c.b = 2 * c.f;
  return c;
}

// A linear layer of `batch` GEMMs, each (m x k) @ (k x n), for one microbatch: the forward GEMM; backward the
// data-gradient GEMM (m x n) @ (n x k) and the weight-gradient GEMM (k x m) @ (m x n), which Megatron-LM
// accumulates straight into the fp32 main gradient (gradient-accumulation fusion), reading and writing it.
Cost linear(const Machine& mc, const Shapes& s, double m, double n, double k, double batch) {
  Cost c;
  c.f = gemm_s(mc, m, n, k, batch, s.ge);
  c.b = gemm_s(mc, m, k, n, batch, s.ge) + gemm_s(mc, k, n, m, batch, s.ge, s.acc);
  c.gemm_f = c.f;
  return c;
}

// One decoder layer without its attention core (projections, MLP or experts, norms, activations, residuals).
Cost layer_body(const Machine& mc, const ModelConfig& m, const Shapes& s, bool moe, double ep, double etp) {
  const double h = s.h;
  const double T = s.tokens;
  const double tp = s.tp;
  const double heads = static_cast<double>(m.heads);
  const double v = static_cast<double>(detail::v_head_dim(m));
  const double attn_params = static_cast<double>(detail::attention_params(m, detail::Biases::exclude));
  const double out_k = heads * v;
  const double in_n = std::max(0.0, attn_params - out_k * h) / h;  // q, k, v (and MLA) projections, as one GEMM
  Cost c = linear(mc, s, T, in_n / tp, h, 1);
  c += linear(mc, s, T, h, out_k / tp, 1);
  const bool gated = m.mlp == MlpKind::gated;
  const double up = gated ? 2 : 1;
  double act_elems = 0;  // elements entering the activation function
  if (!moe) {
    const double ffn = static_cast<double>(m.ffn_hidden);
    c += linear(mc, s, T, up * ffn / tp, h, 1);
    c += linear(mc, s, T, h, ffn / tp, 1);
    act_elems += T * ffn / tp;
  } else {
    const double experts = static_cast<double>(m.moe.routed_experts);
    const double topk = static_cast<double>(m.moe.top_k);
    const double ffn = static_cast<double>(m.moe.expert_ffn_hidden);
    const double local = std::max(1.0, experts / ep);
    const double rows = T * topk * ep / experts;  // tokens per local expert, balanced routing
    c += linear(mc, s, T, experts, h, 1);  // router
    c += linear(mc, s, rows, up * ffn / etp, h, local);
    c += linear(mc, s, rows, h, ffn / etp, local);
    act_elems += rows * local * ffn / etp;
    if (m.moe.shared_experts > 0) {
      const double sffn = static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden);
      c += linear(mc, s, T, up * sffn / tp, h, 1);
      c += linear(mc, s, T, h, sffn / tp, 1);
      act_elems += T * sffn / tp;
    }
    // Permute and unpermute of the routed tokens: read and write each copy once.
    const double permute = mem_s(mc, 2 * 2 * T * topk * h * s.e, 2);
    c.f += permute;
    c.b += 2 * permute;
  }
  // Memory-bound kernels. Under sequence parallelism norms, dropout and residuals see T / tp tokens.
  const double tn = s.sp ? T / tp : T;
  const double norms = static_cast<double>(m.norms_per_layer);
  double bytes = norms * 2 * tn * h * s.e;                                   // norms: read, write
  double kernels = norms;
  bytes += 2 * (3 * tn * h * s.e + (s.dropout ? tn * h : 0));               // bias-dropout-add x2
  kernels += 2;
  bytes += (gated ? 3 : 2) * act_elems * s.e;                               // activation (gated: 2 in, 1 out)
  kernels += 1;
  if (m.positions == PositionKind::rotary) {
    const double kv = static_cast<double>(m.kv_heads) * static_cast<double>(detail::qk_head_dim(m));
    bytes += 2 * s.e * T * (heads * static_cast<double>(detail::qk_head_dim(m)) + kv) / tp;
    kernels += 2;
  }
  // Backward: twice the traffic of each memory-bound kernel (its input and output gradients).
  const double elementwise = mem_s(mc, bytes, kernels);
  c.f += elementwise;
  c.b += 2 * elementwise;
  return c;
}

// Kernels one decoder layer launches forward (what the host dispatches): GEMMs, the attention core, norms,
// bias-dropout-adds, the activation, rotary embedding, the TP collectives, MoE routing and permutes.
double layer_kernels_forward(const ModelConfig& m, const Shapes& s, bool moe, bool tp_comm) {
  double k = 4;                                                     // qkv, out, up (fc1), down (fc2)
  if (moe) k += 1 + 2 + (m.moe.shared_experts > 0 ? 2 : 0) + 2;    // router, experts, shared, permute/unpermute
  k += s.flash ? 1 : (s.dropout ? 5 : 4);                           // QK^T, softmax, [dropout], PV, context copy
  k += static_cast<double>(m.norms_per_layer) + 2 + 1;              // norms, bias-dropout-add x2, activation
  if (m.positions == PositionKind::rotary) k += 2;
  if (tp_comm) k += 2;
  return k;
}

double dtype_bytes(DType d) { return d == DType::fp32 ? 4.0 : 2.0; }

const char* peak_dtype(const TrainingConfig& t, const GpuSpec& gpu) {
  switch (t.precision) {
    case Precision::fp32: return "fp32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return gpu.has_dtype("fp8") ? "fp8" : "bf16";
  }
  return "bf16";
}

}  // namespace

double step_time_lower_bound_s(const EstimateInputs& in) {
  // Only the linear-layer GEMMs of the decoder layers, forward + backward (2x) + recomputed forward, each at the
  // dense peak times gemm_max_efficiency: estimate_step never prices a GEMM faster (the smooth roofline is at
  // least the compute time, wave utilization is at most 1, and every other term adds time). The layers are
  // spread evenly over the stages, which the slowest stage never beats.
  if (!in.memory.model) return 0;
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  const Layout& l = in.memory.layout;
  const double tp = static_cast<double>(std::max<std::int64_t>(1, l.tp));
  const double pp = static_cast<double>(std::max<std::int64_t>(1, l.pp));
  const double cp = static_cast<double>(std::max<std::int64_t>(1, l.cp));
  const double etp = static_cast<double>(l.etp > 0 ? l.etp : std::max<std::int64_t>(1, l.tp));
  std::int64_t dp = l.dp;
  if (dp <= 0) dp = l.gpus > 0 ? std::max<std::int64_t>(1, l.gpus / std::max<std::int64_t>(1, l.tp * l.pp * l.cp)) : 1;
  const double mb = tr.global_batch > 0 && tr.micro_batch > 0
                        ? static_cast<double>(tr.global_batch / (tr.micro_batch * dp))
                        : 1.0;
  const double efficiency = in.perf ? in.perf->gemm_max_efficiency : perf_constants(in.gpu).gemm_max_efficiency;
  const double peak = in.gpu.tflops(peak_dtype(tr, in.gpu)) * 1e12;
  if (!(peak > 0) || !(efficiency > 0)) return 0;

  const double T = static_cast<double>(tr.micro_batch) * static_cast<double>(tr.seq_len) / cp;
  const double h = static_cast<double>(m.hidden);
  const double up = m.mlp == MlpKind::gated ? 2 : 1;
  const double attn = static_cast<double>(detail::attention_params(m, detail::Biases::exclude)) / tp;
  const double dense_flops = 2 * T * (attn + (up + 1) * static_cast<double>(m.ffn_hidden) * h / tp);
  double layer_flops = dense_flops;
  if (m.is_moe()) {
    // Balanced routing: each token visits top_k experts (at least; more rows per expert when ep exceeds experts).
    double moe_flops = 2 * T * (attn + static_cast<double>(m.moe.routed_experts) * h +
                                static_cast<double>(m.moe.top_k) * (up + 1) *
                                    static_cast<double>(m.moe.expert_ffn_hidden) * h / etp);
    if (m.moe.shared_experts > 0)
      moe_flops += 2 * T * (up + 1) *
                   static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden) * h / tp;
    layer_flops = std::min(dense_flops, moe_flops);
  }
  const double layers = static_cast<double>(m.layers) / pp;  // the most loaded stage holds at least this many
  double recomputed = 0;
  if (l.recompute == Recompute::full)
    recomputed = l.recompute_layers < 0 ? layers : std::min(layers, static_cast<double>(l.recompute_layers));
  return mb * (3 * layers + recomputed) * layer_flops / (peak * efficiency);
}

void prepare_estimate(EstimateInputs& in) {
  if (in.memory.model && !in.memory.counts) prepare_inputs(in.memory);
  if (in.memory.model) in.flops = flops_per_token(*in.memory.model, in.memory.training.seq_len);
  if (!in.perf) in.perf = perf_constants(in.gpu);
}

namespace perf {

double CommMemo::operator()(Collective c, double bytes, const GroupPlacement& g) {
  if (!(bytes > 0) || g.ranks <= 1) return 0;
  const comm::GroupCollective* same_group = nullptr;  // another collective on this group: its placement is set up
  for (int i = 0; i < n_; ++i) {
    const Entry& e = e_[static_cast<std::size_t>(i)];
    if (e.ranks != g.ranks || e.ranks_per_node != g.ranks_per_node || e.concurrent != g.concurrent_groups_per_node)
      continue;
    if (e.c == c) return e.group->time_s(bytes);
    same_group = &*e.group;
  }
  if (n_ == kSize) return collective_time_s(*f_, c, bytes, g);
  Entry& e = e_[static_cast<std::size_t>(n_++)];  // set field by field: the group is large
  e.c = c;
  e.ranks = g.ranks;
  e.ranks_per_node = g.ranks_per_node;
  e.concurrent = g.concurrent_groups_per_node;
  if (same_group != nullptr) return e.group.emplace(*same_group, c).time_s(bytes);
  return e.group.emplace(*f_, c, g).time_s(bytes);
}

namespace {

// Exposed part of a collective overlapped with compute: what exceeds the compute, plus the compute it slows
// (overlap_slowdown of the hidden part: the SMs and HBM bandwidth the collective's kernels take).
double overlapped(double slowdown, double comm, double compute) {
  comm = std::max(0.0, comm);
  return std::max(0.0, comm - compute) + slowdown * std::min(comm, compute);
}

}  // namespace

StepModel::StepModel(const EstimateInputs& in)
    : in_(&in), tp_overlap_(in.time.tp_overlap), dp_overlap_(in.time.dp_overlap), coll_(in.fabric) {
  if (!in.memory.model)
    throw InputError("--model", "(none)", "a model architecture: the step time is computed per operation, --params alone is not enough");
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  l_ = resolve_layout(in.memory);
  const Layout& l = l_;
  const std::int64_t gpus_per_node = std::max(1, in.fabric.gpus_per_node);
  const std::int64_t capacity = static_cast<std::int64_t>(gpus_per_node) * std::max(1, in.fabric.nodes);
  if (l.gpus > capacity)
    throw InputError("--gpus", std::to_string(l.gpus),
                     "at most " + std::to_string(capacity) + " (" + std::to_string(in.fabric.nodes) + " nodes x " +
                         std::to_string(gpus_per_node) + " GPUs per node); add nodes or shrink the layout");
  place_ = place_ranks(l, static_cast<int>(gpus_per_node), parse_order(in.time.order));
  host_sharers_ = static_cast<double>(std::min(gpus_per_node, std::max<std::int64_t>(1, l.gpus)));
  const RankPlacement& place = place_;

  if (!in.memory.counts) counted_ = count_params(m);
  const ParamCounts& pc = in.memory.counts ? *in.memory.counts : *counted_;
  stages_ = memory::stage_params(in.memory, l, &pc);
  if (!in.perf) loaded_ = perf_constants(in.gpu);
  perf_ = in.perf ? &*in.perf : &*loaded_;
  const PerfConstants& perf = *perf_;
  fpt_ = in.flops ? *in.flops : flops_per_token(m, tr.seq_len);
  host_Bps_ = in.gpu.host_per_direction_GBps * 1e9 * perf.host_link_efficiency;

  Machine mc;
  peak_tflops_ = in.gpu.tflops(peak_dtype(tr, in.gpu));
  mc.peak = peak_tflops_ * 1e12;
  mc.hbm = in.gpu.memory_GBps * 1e9;
  mc.c = &perf;
  hbm_Bps_ = mc.hbm;
  if (!(mc.hbm > 0)) throw InputError("--gpu", in.gpu.name, "a GPU with a memory bandwidth in the catalog");

  Shapes s;
  s.tp = static_cast<double>(l.tp);
  s.b = static_cast<double>(tr.micro_batch);
  s.s_loc = static_cast<double>(tr.seq_len) / static_cast<double>(l.cp);
  s.s_kv = static_cast<double>(tr.seq_len);
  s.tokens = s.b * s.s_loc;
  s.h = static_cast<double>(m.hidden);
  s.e = memory::activation_element_bytes(tr);
  s.ge = tr.precision == Precision::fp8 ? 1.0 : s.e;
  s.acc = 2 * (tr.precision == Precision::fp32 ? 4.0 : dtype_bytes(tr.grad_dtype));
  s.sp = l.sequence_parallel && l.tp > 1;
  s.dropout = tr.dropout > 0;
  s.flash = l.attention == Attention::flash;
  const double ep = static_cast<double>(l.ep);
  const double etp = static_cast<double>(l.etp > 0 ? l.etp : l.tp);

  // Compute per layer kind, one microbatch.
  const Cost core = attention_core(mc, m, s);
  Cost dense = layer_body(mc, m, s, false, ep, etp);
  dense += core;
  Cost moe{};
  if (m.is_moe()) {
    moe = layer_body(mc, m, s, true, ep, etp);
    moe += core;
  }
  dense_f_ = dense.f;
  moe_f_ = moe.f;
  core_f_ = core.f;
  layer_gemm_f_ = dense.gemm_f;
  // Embedding (first stage) and output layer + loss (last stage).
  width_ = static_cast<double>(detail::embedding_width(m));
  const double vocab_t = static_cast<double>(m.vocab) / s.tp;
  Cost embed;
  embed.f = mem_s(mc, 4 * s.tokens * s.h * s.e, 2);
  embed.b = mem_s(mc, vocab_t * width_ * 4 + s.tokens * s.h * (s.e + 4), 2);
  Cost head;
  {
    const Cost out = linear(mc, s, s.tokens, vocab_t, width_, 1);
    const double norm = mem_s(mc, 2 * s.tokens * s.h * s.e, 1);  // the final norm
    // Vocabulary-parallel cross-entropy in fp32: max, exp-sum and loss passes forward, the softmax gradient backward.
    head.f = out.f + norm + mem_s(mc, s.tokens * vocab_t * (s.e + 3 * 4), 3);
    head.b = out.b + 2 * norm + mem_s(mc, s.tokens * vocab_t * (4 + 4 + s.e), 2);
  }

  // Communication per layer and microbatch.
  CommMemo& coll = coll_;
  const double act_bytes = s.tokens * s.h * s.e;  // the full (b, s/cp, h) activation
  if (l.tp > 1) {
    if (s.sp)
      tp_layer_f_ = 2 * (coll(Collective::allgather, act_bytes, place.tp) +
                         coll(Collective::reducescatter, act_bytes, place.tp));
    else
      tp_layer_f_ = 2 * coll(Collective::allreduce, act_bytes, place.tp);
  }
  double cp_layer_f = 0;
  if (l.cp > 1) {
    const double kv_bytes = 2 * s.tokens * static_cast<double>(m.kv_heads) * static_cast<double>(detail::qk_head_dim(m)) / s.tp * s.e;
    GroupPlacement pair{2, place.cp.ranks_per_node > 1 ? 2 : 1, place.cp.concurrent_groups_per_node};
    cp_layer_f = static_cast<double>(l.cp - 1) * coll(Collective::sendrecv, kv_bytes, pair);
  }
  if (m.is_moe() && l.ep > 1) {
    const double tokens = s.sp ? s.tokens / s.tp : s.tokens;
    const double bytes = tokens * static_cast<double>(m.moe.top_k) * s.h * s.e;
    ep_layer_f_ = 2 * coll(Collective::alltoall, bytes, place.ep);
  }
  // Host dispatch: the framework issues every kernel from the CPU and the GPU runs behind it; a microbatch of a
  // stage takes the longer of its GPU time and its host time (forward, recomputed forward, backward at 2x).
  const double dense_kernels = layer_kernels_forward(m, s, false, l.tp > 1);
  const double moe_kernels = m.is_moe() ? layer_kernels_forward(m, s, true, l.tp > 1) : dense_kernels;
  // Embedding: lookup (+ positions, dropout); output layer: GEMM, final norm, cross-entropy passes.
  const double embed_kernels = 3, head_kernels = 1 + 1 + 3;
  // CP ring steps hide behind the attention core.
  cp_f_ = std::max(0.0, cp_layer_f - core.f);
  cp_b_ = std::max(0.0, 2 * cp_layer_f - core.b);

  // Microbatches per pipeline and step, as estimate_memory counts them.
  mb_ = static_cast<double>(tr.global_batch > 0 ? tr.global_batch / (tr.micro_batch * l.dp) : 1);
  v_ = static_cast<double>(l.schedule == PpSchedule::interleaved ? l.vpp : 1);
  grad_bytes_ = tr.precision == Precision::fp32 ? 4.0 : dtype_bytes(tr.grad_dtype);
  weight_bytes_ = tr.precision == Precision::fp32 ? 4.0 : 2.0;
  edp_ = std::max(1.0, static_cast<double>(l.dp) * static_cast<double>(l.cp) / ep * (s.tp / etp));

  // Per pipeline stage, one microbatch: what no ZeRO stage, offload or recomputation changes.
  base_.resize(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const memory::StageParams& sp = stages_[i];
    Stage& b = base_[i];
    b.layers = static_cast<double>(sp.layers);
    b.moe_layers = static_cast<double>(sp.moe_layers);
    const double dense_layers = b.layers - b.moe_layers;
    b.fwd = dense_layers * dense.f + b.moe_layers * moe.f;
    b.bwd = dense_layers * dense.b + b.moe_layers * moe.b;
    if (sp.first) {
      b.fwd += embed.f;
      b.bwd += embed.b;
    }
    if (sp.last) {
      b.fwd += head.f;
      b.bwd += head.b;
    }
    // The vocabulary-parallel embedding all-reduces its output and the loss all-reduces three per-token scalars.
    if (l.tp > 1 && sp.first) b.tp_first_last += coll(Collective::allreduce, act_bytes, place.tp);
    if (l.tp > 1 && sp.last) b.tp_first_last += 3 * coll(Collective::allreduce, s.tokens * 4, place.tp);
    b.layer_kernels = dense_layers * dense_kernels + b.moe_layers * moe_kernels;
    b.fwd_kernels = b.layer_kernels + (sp.first ? embed_kernels : 0) + (sp.last ? head_kernels : 0);
  }
  // Pipeline: one send/recv per microbatch per boundary each way on the critical path (activations scattered
  // over the TP ranks, as Megatron-LM's scatter-gather optimization does).
  const std::size_t p = stages_.size();
  if (p > 1) {
    const double bytes = act_bytes / s.tp;
    pp_comm_ = 2 * (mb_ * v_ + static_cast<double>(p - 1)) * coll(Collective::sendrecv, bytes, place.pp);
  }
  if (p > 1 && m.tied_embeddings)
    embed_sync_ = coll(Collective::allreduce, vocab_t * width_ * grad_bytes_, place.pp);
  // Buckets hold dp_bucket_elements gradient elements; the same byte count bounds the weight all-gather's.
  bucket_bytes_ = perf.dp_bucket_elements * grad_bytes_;
}

double StepModel::bucket_time(Collective c, double bytes, double& full) const {
  if (bytes < bucket_bytes_) return coll_(c, bytes, place_.dp);
  if (full < 0) full = coll_(c, bucket_bytes_, place_.dp);
  return full;
}

const StepModel::DpCollectives& StepModel::dp_collectives(std::size_t i, int family) const {
  DpCollectives& d = base_[i].dp[static_cast<std::size_t>(family)];
  if (d.priced) return d;
  const memory::StageParams& sp = stages_[i];
  // Stages holding the same parameters (the middle ones) move the same bytes.
  if (i > 0 && stages_[i - 1].dense == sp.dense && stages_[i - 1].expert == sp.expert) {
    d = dp_collectives(i - 1, family);
    return d;
  }
  const double g_dense = sp.dense * grad_bytes_, g_expert = sp.expert * grad_bytes_;
  const double w_dense = sp.dense * weight_bytes_;
  CommMemo& coll = coll_;
  if (family == 0) {
    d.reduce = coll(Collective::allreduce, g_dense, place_.dp) + coll(Collective::allreduce, g_expert, place_.edp);
    d.reduce_bucket = bucket_time(Collective::allreduce, g_dense, full_reduce_bucket_[0]);
  } else {
    // ZeRO-1/2 and the distributed optimizer: reduce-scatter the gradients, all-gather the updated weights.
    // ZeRO-3 reduce-scatters each microbatch's gradients and gathers the weights forward and backward.
    d.reduce = coll(Collective::reducescatter, g_dense, place_.dp) +
               coll(Collective::reducescatter, g_expert, place_.edp);
    d.gather = coll(Collective::allgather, w_dense, place_.dp) +
               coll(Collective::allgather, sp.expert * weight_bytes_, place_.edp);
    d.reduce_bucket = bucket_time(Collective::reducescatter, g_dense, full_reduce_bucket_[1]);
    d.gather_bucket = bucket_time(Collective::allgather, w_dense, full_gather_bucket_);
  }
  d.priced = true;
  return d;
}

StepEstimate StepModel::time(const Layout& variant) const {
  const EstimateInputs& in = *in_;
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  const PerfConstants& perf = *perf_;
  const Layout& l = l_;
  const int zero = variant.zero;
  const Recompute recompute = variant.recompute;
  const Offload offload = variant.offload;
  Machine mc;
  mc.peak = peak_tflops_ * 1e12;
  mc.hbm = hbm_Bps_;
  mc.c = &perf;
  const double slow = perf.overlap_slowdown;
  // TP hides behind the layer's GEMMs with --tp-overlap, and only behind those: the norms, activations and
  // attention core run between them and hide nothing. Across nodes the collective is priced on the network tier
  // its group spans and still hides behind no more than that.
  auto tp_exposed = [&](double comm, double compute) {
    return tp_overlap_ ? overlapped(slow, comm, compute) : comm;
  };
  const double dp = static_cast<double>(l.dp);
  const double host_Bps = host_Bps_;

  struct StageTime {
    double fwd = 0, bwd = 0, rec = 0, tp = 0, cp = 0, ep = 0, zero3 = 0, offload = 0, host = 0;
    double total() const { return fwd + bwd + rec + tp + cp + ep + zero3 + offload + host; }
  };
  StepEstimate r;
  r.peak_tflops = peak_tflops_;
  double t_max = 0, t_sum = 0, bwd_sum = 0;
  StageTime slowest;
  double dp_exposed = 0, optimizer = 0, offload_step = 0;
  double hw_recompute_flops = 0;  // per microbatch, summed over stages (for HFU)
  const std::size_t p = stages_.size();
  for (std::size_t i = 0; i < p; ++i) {
    const memory::StageParams& sp = stages_[i];
    const Stage& b = base_[i];
    const double layers = b.layers, moe_layers = b.moe_layers;
    StageTime st;
    st.fwd = b.fwd;
    st.bwd = b.bwd;
    double recomputed = 0;
    if (recompute == Recompute::full) {
      recomputed = variant.recompute_layers < 0 ? layers : std::min(layers, static_cast<double>(variant.recompute_layers));
      const double moe_share = layers > 0 ? moe_layers / layers : 0;
      st.rec = recomputed * ((1 - moe_share) * dense_f_ + moe_share * moe_f_);
    } else if (recompute == Recompute::selective) {
      st.rec = layers * core_f_;
    }
    // TP: two collectives per layer forward, two backward, the forward ones again for recomputed layers.
    st.tp = layers * (tp_exposed(tp_layer_f_, layer_gemm_f_) + tp_exposed(tp_layer_f_, 2 * layer_gemm_f_)) +
            recomputed * tp_exposed(tp_layer_f_, layer_gemm_f_) + b.tp_first_last;
    st.cp = layers * (cp_f_ + cp_b_) + recomputed * cp_f_;
    st.ep = moe_layers * 2 * ep_layer_f_ + (layers > 0 ? recomputed * moe_layers / layers : 0) * ep_layer_f_;

    // Data parallel. Local gradients: dense over the data x context group, experts over the expert-data group.
    const DpCollectives& dpc = dp_collectives(i, zero == 0 ? 0 : 1);
    double dp_t = 0, dp_bucket = 0, ag_t = 0, ag_bucket = 0;
    if (zero == 0) {
      dp_t = dpc.reduce;
      dp_bucket = dpc.reduce_bucket;
    } else if (zero == 3) {
      // Gathers are prefetched one layer ahead, so the first layer's gather waits in each pass; the rest hides
      // behind the compute of the pass only as far as it is shorter, and slows that compute while it runs.
      const double rs = dpc.reduce, ag = dpc.gather;
      const double first = layers > 0 ? ag / layers : ag;
      st.zero3 = 2 * first + overlapped(slow, ag - first, st.fwd) + overlapped(slow, ag - first + rs, st.bwd + st.rec);
    } else {
      dp_t = dpc.reduce;
      dp_bucket = dpc.reduce_bucket;
      ag_t = dpc.gather;
      ag_bucket = dpc.gather_bucket;
    }
    double exposed = 0;
    if (dp_overlap_) {
      exposed = std::min(dp_t, dp_bucket + overlapped(slow, dp_t - dp_bucket, st.bwd + st.rec)) +
                std::min(ag_t, ag_bucket + overlapped(slow, ag_t - ag_bucket, st.fwd));
    } else {
      exposed = dp_t + ag_t;
    }
    // Stage i finishes its last backward about i backward passes before stage 0 does.
    dp_exposed = std::max(dp_exposed, exposed - bwd_sum);

    // Optimizer step over the local shard; offloaded: on the CPU, with gradients down and weights up the host link.
    const double shard = sp.dense / (zero >= 1 ? dp * static_cast<double>(l.cp) : 1.0) + sp.expert / (zero >= 1 ? edp_ : 1.0);
    if (offload == Offload::none) {
      optimizer = std::max(optimizer, mem_s(mc, shard * perf.optimizer_bytes_per_param, 8));
    } else {
      optimizer = std::max(optimizer, shard * host_sharers_ / perf.cpu_adam_params_per_s);  // the node's CPUs, shared
      if (host_Bps > 0) {
        const double down = shard * grad_bytes_ / host_Bps, up = shard * weight_bytes_ / host_Bps;
        offload_step = std::max(offload_step, std::max(0.0, down - st.bwd) + up);
        if (offload == Offload::optimizer_and_params) {
          // Weights streamed in for each microbatch's forward and backward, overlapped with that compute.
          const double stream = (sp.dense + sp.expert) * weight_bytes_ / host_Bps;
          st.offload = std::max(0.0, stream - st.fwd) + std::max(0.0, stream - st.bwd - st.rec);
        }
      }
    }
    {
      const double rec_kernels = layers > 0 ? recomputed * b.layer_kernels / layers : 0;
      const double host = (3 * b.fwd_kernels + rec_kernels) * perf.host_op_s;
      const double gpu = st.fwd + st.bwd + st.rec + st.tp + st.cp + st.ep + st.zero3 + st.offload;
      st.host = std::max(0.0, host - gpu);
    }
    hw_recompute_flops += recomputed;  // layer count; converted below
    const double t = st.total();
    t_sum += t;
    bwd_sum += st.bwd + st.rec;
    if (t > t_max) {
      t_max = t;
      slowest = st;
    }
  }
  const double t_avg = t_sum / static_cast<double>(p);
  const double bubble = static_cast<double>(p - 1) * t_avg / v_;
  const double mb = mb_;

  std::size_t term = 0;
  auto add = [&](std::string_view name, double t) { r.breakdown.at(term++) = TimeTerm{name, t}; };
  add("forward", mb * slowest.fwd);
  add("backward", mb * slowest.bwd);
  add("recompute", mb * slowest.rec);
  add("tp_comm", mb * slowest.tp);
  add("cp_comm", mb * slowest.cp);
  add("ep_comm", mb * slowest.ep);
  add("zero3_comm", mb * slowest.zero3);
  add("offload_stream", mb * slowest.offload);
  add("host_bound", mb * slowest.host);
  add("pipeline_bubble", bubble);
  add("pp_comm", pp_comm_);
  add("dp_comm", dp_exposed);
  add("embedding_sync", embed_sync_);
  add("optimizer", optimizer + offload_step);
  add("overhead", perf.step_overhead_s);
  double step = 0;
  for (const auto& [name, t] : r.breakdown) step += t;
  if (term != kTimeTerms) throw std::logic_error("estimate_step: every breakdown term must be filled");
  r.step_s = step;

  const double tokens = mb * static_cast<double>(tr.micro_batch) * dp * static_cast<double>(tr.seq_len);
  const double gpus = static_cast<double>(l.gpus);
  r.tokens_per_s = tokens / step;
  r.tokens_per_s_per_gpu = r.tokens_per_s / gpus;
  r.model_tflops_per_gpu = fpt_.training * tokens / step / gpus / 1e12;
  // Hardware FLOPs add the recomputed forward: whole layers (full) or the attention core (selective).
  const double layers_total = static_cast<double>(m.layers);
  const double head_fwd = 2 * static_cast<double>(m.vocab) * width_;
  double extra_per_token = 0;
  if (recompute == Recompute::full)
    extra_per_token = (fpt_.forward - head_fwd) * hw_recompute_flops / layers_total;
  else if (recompute == Recompute::selective)
    extra_per_token = fpt_.attention_forward;
  r.hardware_tflops_per_gpu = (fpt_.training + extra_per_token) * tokens / step / gpus / 1e12;
  r.mfu = r.model_tflops_per_gpu / r.peak_tflops;
  r.hfu = r.hardware_tflops_per_gpu / r.peak_tflops;
  return r;
}

}  // namespace perf

StepEstimate estimate_step(const EstimateInputs& in) {
  const perf::StepModel model(in);
  StepEstimate r = model.time(model.layout());
  r.memory = memory::estimate_with_stages(in.memory, model.layout(), false, model.stages());
  return r;
}

StepEstimate estimate_step_time(const EstimateInputs& in) {
  const perf::StepModel model(in);
  return model.time(model.layout());
}

}  // namespace gpuplan
