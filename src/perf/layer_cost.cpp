// Compute time of GEMMs, memory-bound kernels, the attention core and a decoder layer. See docs/estimate.md.
#include "perf/layer_cost.hpp"

#include <algorithm>
#include <cmath>

#include "model/param_parts.hpp"
#include "model/torchtitan_sac.hpp"
#include "perf/cp_bookkeeping.hpp"
#include "perf/elementwise_ops.hpp"
#include "perf/gemm_table.hpp"

namespace gpuplan::perf {

namespace {

// ceil(x) for x >= 0 without a libm call (this is the innermost arithmetic of a search); doubles from 2^52 up
// are whole already.
double ceil_nonneg(double x) {
  if (!(x < 4.5e15)) return x;
  const double t = static_cast<double>(static_cast<std::int64_t>(x));
  return t < x ? t + 1 : t;
}

}  // namespace

// A smooth roofline over compute and operand traffic, with the compute side derated by the dense peak fraction
// and by wave quantization over the SMs.
double gemm_s(const Machine& mc, double m, double n, double k, double batch, double elem_bytes, double out_bytes,
              double math_slowdown) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const PerfConstants& c = *mc.constants;
  const double flops = 2 * m * n * k * batch;
  const double tiles = ceil_nonneg(m / c.gemm_tile_m) * ceil_nonneg(n / c.gemm_tile_n) * batch;
  const double waves = ceil_nonneg(tiles / c.sm_count);
  const double wave_util = tiles / (waves * c.sm_count);
  const double dtype_max = elem_bytes < 2 && c.fp8_gemm_max_efficiency > 0 ? c.fp8_gemm_max_efficiency
                                                                          : c.gemm_max_efficiency;
  const double efficiency = std::min(1.0, dtype_max * c.compute_efficiency_scale);
  const double compute_s = math_slowdown * flops / (mc.peak_flops * efficiency * wave_util);
  const double traffic_s =
      (elem_bytes * (m * k + k * n) + out_bytes * m * n) * batch / (mc.hbm_Bps * c.gemm_memory_efficiency);
  const double p = c.roofline_sharpness;
  const double t = p == 1   ? compute_s + traffic_s
                   : p == 2 ? std::sqrt(compute_s * compute_s + traffic_s * traffic_s)
                            : std::pow(std::pow(compute_s, p) + std::pow(traffic_s, p), 1 / p);
  return t + c.kernel_overhead_s;
}

double gemm_s(const Machine& mc, double m, double n, double k, double batch, double elem_bytes) {
  return gemm_s(mc, m, n, k, batch, elem_bytes, elem_bytes);
}

double memory_bound_s(const Machine& mc, double bytes, double kernels, double measured_efficiency) {
  if (bytes <= 0) return 0;
  const double efficiency = measured_efficiency > 0 ? measured_efficiency : mc.constants->memory_bound_efficiency;
  return bytes / (mc.hbm_Bps * efficiency) + kernels * mc.constants->kernel_overhead_s;
}

namespace {

// Flash attention at the efficiencies measured for its kernel calls on this GPU (16-bit operands). The table's
// efficiencies count the full s x s products (twice the causal kernel's work): forward 2 x tokens x keys x heads x
// (qk + v), backward 2.5x that (the recomputed scores), as SimuMax's CoreAttention counts them.
Cost measured_attention(const Machine& mc, const MicrobatchShape& s, double heads, double qk, double v) {
  // Under a2a context parallelism one call runs the whole sequence with the heads split over the CP ranks. The
  // micro-batch's sequences run in the same call, as more heads would (lookup_attention).
  const double heads_per_call = std::max(1.0, heads / s.attention_head_split);
  const double batch_heads = std::max(1.0, s.micro_batch) * heads_per_call;
  const AttentionEfficiencies e =
      lookup_attention(*mc.constants->gemm_table, batch_heads, s.attention_keys_per_call, qk);
  const double full_flops = 2 * s.tokens * s.keys_per_query * heads * (qk + v);
  Cost c;
  c.forward_s = full_flops / (mc.peak_flops * e.forward) + s.attention_calls * mc.constants->kernel_overhead_s;
  c.backward_s =
      2.5 * full_flops / (mc.peak_flops * e.backward) + 2 * s.attention_calls * mc.constants->kernel_overhead_s;
  return c;
}

// The attention kernels of one layer: scores, softmax and context.
Cost attention_kernels(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s) {
  const double heads = static_cast<double>(m.heads) / s.tp;
  const double qk = static_cast<double>(detail::qk_head_dim(m));
  const double v = static_cast<double>(detail::v_head_dim(m));
  const auto& table = mc.constants->gemm_table;
  const bool flash_attention_2 = s.torch_sdpa || s.flash_attn_package;
  if (s.flash && !flash_attention_2 && s.gemm_element_bytes == 2 && table && !table->attention.empty())
    return measured_attention(mc, s, heads, qk, v);
  Cost c;
  if (s.flash) {
    // Causal kernels skip the masked half of the s x s product; the backward recomputes the scores (2.5x FLOPs).
    // Short kernel calls fill the GPU less: under context parallelism a call sees a chunk of the keys
    // (set_attention_calls says which, by --cp-comm-type).
    const double flops = 2 * s.tokens * s.keys_per_query * heads * (qk + v) * 0.5;
    const double keys = s.attention_keys_per_call;
    const PerfConstants& pc = *mc.constants;
    const double long_keys = flash_attention_2 && pc.sdpa_attention_efficiency > 0
                                 ? pc.sdpa_attention_efficiency
                                 : pc.flash_attention_efficiency;
    const double efficiency = long_keys * keys / (keys + pc.flash_attention_half_length);
    const double t = flops / (mc.peak_flops * efficiency);
    const double calls = s.attention_calls;
    c.forward_s = t + calls * mc.constants->kernel_overhead_s;
    c.backward_s = 2.5 * t + 2 * calls * mc.constants->kernel_overhead_s;
    return c;
  }
  const double batch_heads = s.micro_batch * heads;
  c.forward_s = gemm_s(mc, s.local_sequence, s.keys_per_query, qk, batch_heads, s.gemm_element_bytes) +
                gemm_s(mc, s.local_sequence, v, s.keys_per_query, batch_heads, s.gemm_element_bytes);
  // Fused scale-mask-softmax reads and writes the scores; dropout on the probabilities adds a pass and a mask.
  const double scores = batch_heads * s.local_sequence * s.keys_per_query;
  double bytes = scores * 2 * s.element_bytes;
  double kernels = 1;
  if (s.dropout) {
    bytes += scores * (2 * s.element_bytes + 1);
    kernels += 1;
  }
  c.forward_s += memory_bound_s(mc, bytes, kernels);
  c.backward_s = 2 * c.forward_s;
  return c;
}

}  // namespace

Cost attention_core(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s) {
  if (s.gemm_element_bytes < s.element_bytes) {   // fp8 training: the attention core runs in 16 bits
    const SixteenBit sixteen = sixteen_bit(mc, s);
    return attention_core(sixteen.mc, m, sixteen.s);
  }
  Cost c = attention_kernels(mc, m, s);
  c += cp_bookkeeping_cost(mc, m, s);
  return c;
}

namespace {

// A linear layer's three GEMMs at the efficiencies measured for its shape on this GPU (16-bit operands).
Cost measured_linear(const Machine& mc, double m, double n, double k, double batch) {
  Cost c;
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return c;
  const GemmEfficiencies e = lookup(*mc.constants->gemm_table, batch > 1, m, n, k);
  const double flops = 2 * m * n * k * batch;
  const double overhead = mc.constants->kernel_overhead_s;
  const double scale = mc.constants->compute_efficiency_scale;
  auto rate = [&](double efficiency) { return mc.peak_flops * std::min(1.0, efficiency * scale); };
  c.forward_s = flops / rate(e.forward) + overhead;
  c.backward_s = flops / rate(e.dgrad) + flops / rate(e.wgrad) + 2 * overhead;
  c.gemm_forward_s = c.forward_s;
  return c;
}

}  // namespace

// The backward runs the data-gradient GEMM (m x n) @ (n x k) and the weight-gradient GEMM (k x m) @ (m x n),
// which Megatron-LM accumulates straight into the fp32 main gradient (gradient-accumulation fusion), reading and
// writing it.
// Under fp8, Transformer Engine quantizes each linear's input forward and its output gradient backward: one
// kernel reads the 16-bit tensor and writes it in fp8 twice, row-wise and column-wise (the weight-gradient GEMM
// takes both operands transposed; Hopper's fp8 GEMMs take only the TN layout). The two gradient GEMMs run with the
// split accumulator (fp8_split_accumulation_slowdown), the forward with fast accumulation. The weights' own casts,
// once per step under gradient accumulation (is_first_microbatch), are not priced. torchao's dynamic scaling adds
// the amax pass before each cast (MicrobatchShape::fp8_amax_pass).
Cost linear(const Machine& mc, const MicrobatchShape& s, double m, double n, double k, double batch) {
  if (mc.constants->gemm_table && s.gemm_element_bytes == 2) return measured_linear(mc, m, n, k, batch);
  const bool fp8 = s.gemm_element_bytes < s.element_bytes;
  const double gradient_math = fp8 ? mc.constants->fp8_split_accumulation_slowdown : 1.0;
  const double e = s.gemm_element_bytes;
  Cost c;
  c.forward_s = gemm_s(mc, m, n, k, batch, e);
  c.backward_s = gemm_s(mc, m, k, n, batch, e, e, gradient_math) +
                 gemm_s(mc, k, n, m, batch, e, s.gradient_rw_bytes, gradient_math);
  c.gemm_forward_s = c.forward_s;
  if (fp8) {
    // With dynamic scaling (torchao) the amax pass reads the 16-bit tensor once more, in a kernel of its own.
    const double amax_read = s.fp8_amax_pass ? s.element_bytes : 0.0;
    const double kernels = s.fp8_amax_pass ? 2 : 1;
    const double per_element = s.element_bytes + 2 * s.gemm_element_bytes + amax_read;
    c.forward_s += memory_bound_s(mc, per_element * m * k * batch, kernels);
    c.backward_s += memory_bound_s(mc, per_element * m * n * batch, kernels);
  }
  return c;
}

SixteenBit sixteen_bit(const Machine& mc, const MicrobatchShape& s) {
  SixteenBit out{mc, s};
  if (mc.peak16_flops > 0) out.mc.peak_flops = mc.peak16_flops;
  out.s.gemm_element_bytes = s.element_bytes;
  return out;
}

// Bytes and kernels over the logits (L elements of e bytes) of each loss implementation, from its source:
// - unfused, Megatron-LM megatron/core/tensor_parallel/cross_entropy.py (_VocabParallelCrossEntropy): forward
//   upcasts to fp32 (e + 4), takes the row max (4), subtracts it in place (8), exponentiates in place (8), sums
//   (4) and divides in place (8), keeping the fp32 softmax; backward scales it in place (8) and autograd casts the
//   gradient back to the logits' dtype (4 + e). Megatron-DeepSpeed's copy does the same passes.
// - fused-native, megatron/core/fusions/fused_cross_entropy.py: the upcast and max in one kernel (e + 4), the
//   subtraction and exponent in one (8), the sum (4) and the division (8); backward as unfused.
// - fused-te, Transformer Engine transformer_engine/pytorch/triton/cross_entropy.py (as of commit 02965d2; older
//   releases write the gradient in the forward): forward one online-softmax pass over the 16-bit logits (e);
//   backward one pass that writes the gradient over them (2e).
// - chunked (a fused linear + cross-entropy that never materialises the whole logits): assumed to make fused-te's
//   passes over its chunks, at memory_bound_efficiency; no measurement of one is at hand.
Cost cross_entropy(const Machine& mc, double logits, double element_bytes, Loss loss) {
  const double e = element_bytes;
  const PerfConstants& pc = *mc.constants;   // the rates measured for these kernels, where there are any
  Cost c;
  switch (loss) {
    case Loss::unfused:
      c.forward_s = memory_bound_s(mc, logits * (e + 36), 6, pc.cross_entropy_efficiency);
      c.backward_s = memory_bound_s(mc, logits * (12 + e), 2, pc.cross_entropy_efficiency);
      break;
    case Loss::fused_native:
      c.forward_s = memory_bound_s(mc, logits * (e + 24), 4, pc.cross_entropy_efficiency);
      c.backward_s = memory_bound_s(mc, logits * (12 + e), 2, pc.cross_entropy_efficiency);
      break;
    case Loss::fused_te:
      c.forward_s = memory_bound_s(mc, logits * e, 1, pc.te_cross_entropy_efficiency);
      c.backward_s = memory_bound_s(mc, logits * 2 * e, 1, pc.te_cross_entropy_efficiency);
      break;
    case Loss::chunked:
      c.forward_s = memory_bound_s(mc, logits * e, 1);
      c.backward_s = memory_bound_s(mc, logits * 2 * e, 1);
      break;
  }
  return c;
}

// Permute and unpermute of the routed tokens (`routed_bytes`: one copy of every routed token), forward and
// backward. Each reads and writes every routed copy once, and their backward is the same gather/scatter the other
// way: the same bytes, which SimuMax's B200 timings of Transformer Engine's moe_permute/moe_unpermute confirm
// (backward within 2 % of forward). Four kernels each way, at the rate measured for these kernels where
// data/perf.json has one (permute_efficiency), otherwise as any bandwidth-bound kernel.
Cost permutes(const Machine& mc, double routed_bytes) {
  Cost c;
  c.forward_s = memory_bound_s(mc, 2 * 2 * routed_bytes, 4, mc.constants->permute_efficiency);
  c.backward_s = c.forward_s;
  return c;
}

// Megatron-LM's all-to-all dispatcher (moe/token_dispatcher.py, "permutation 2") sorts the tokens a rank received
// by local expert after the dispatch and unsorts them before the combine (sort_chunks_by_idxs, or a transpose copy
// when padded to capacity) when the rank holds more than one expert: a read and a write of every received copy
// each time, and the same for their gradients.
Cost dispatcher_sorts(const Machine& mc, double routed_bytes, double ep, double local_experts) {
  Cost c;
  if (ep > 1 && local_experts > 1) c.forward_s = c.backward_s = memory_bound_s(mc, 2 * 2 * routed_bytes, 2);
  return c;
}

namespace {
double router_forward_kernels(bool token_drop) { return token_drop ? 26 : 20; }
}  // namespace

// Megatron-LM's TopKRouter with its unfused routing (moe/router.py, moe/moe_utils.py topk_routing_with_score_function
// and apply_router_token_dropping; --moe-router-fusion off, its default), counted as PyTorch launches them. Forward:
// the top-k over the experts (1), the softmax of the chosen scores and its cast (2), the probabilities scattered
// into a zeroed tokens x experts tensor (3: zeros, the out-of-place scatter's copy and scatter), the routing map
// likewise with its int and bool casts (5), the load-balancing loss's scores (softmax, top-k and a map: 7) and both
// token counts per expert (2): 20 kernels. Dropping tokens adds the top-k of each expert's column, its mask (zeros,
// scatter's copy and scatter, bool) and the masked probabilities: 6. Backward, the autograd of the probabilities'
// path: the scatter's gather, the cast, the softmax and the top-k's zeros and scatter (5), and the masked product
// when dropping (1). Each kernel is small: a read and a write of the fp32 tokens x experts scores.
Cost router_ops(const Machine& mc, double tokens, double experts, bool token_drop) {
  const double forward_kernels = router_forward_kernels(token_drop), backward_kernels = token_drop ? 6 : 5;
  const double pass_bytes = 2 * 4 * tokens * experts;
  Cost c;
  c.forward_s = memory_bound_s(mc, forward_kernels * pass_bytes, forward_kernels);
  c.backward_s = memory_bound_s(mc, backward_kernels * pass_bytes, backward_kernels);
  return c;
}

namespace {

// Router, routed experts (the busiest rank's share of the routed tokens), shared experts, and the permutes of a MoE
// layer's MLP, added to `c` in this order; the elements entering the activation function are added to `act_elems`.
void add_moe_mlp(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s, double ep, double etp, Cost& c,
                 double& act_elems) {
  const double h = s.hidden, tokens = s.tokens, up = m.mlp == MlpKind::gated ? 2 : 1;
  const double experts = static_cast<double>(m.moe.routed_experts);
  const double topk = static_cast<double>(m.moe.top_k);
  const double ffn = static_cast<double>(m.moe.expert_ffn_hidden);
  const double local_experts = std::max(1.0, experts / ep);
  const double rows = tokens * topk * ep / experts * s.routed_share;   // tokens per local expert, busiest rank
  // The router sees the rank's share of the sequence under sequence parallelism.
  const double router_tokens = s.sequence_parallel ? tokens / s.tp : tokens;
  const SixteenBit sixteen = sixteen_bit(mc, s);   // the router is not a Transformer Engine module
  c += linear(sixteen.mc, sixteen.s, router_tokens, experts, h, 1);   // gating
  c += router_ops(mc, router_tokens, experts, s.token_drop);
  c += linear(mc, s, rows, up * ffn / etp, h, local_experts);
  c += linear(mc, s, rows, h, ffn / etp, local_experts);
  act_elems += rows * local_experts * ffn / etp;
  if (m.moe.shared_experts > 0) {
    const double shared_ffn = static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden);
    c += linear(mc, s, tokens, up * shared_ffn / s.tp, h, 1);
    c += linear(mc, s, tokens, h, shared_ffn / s.tp, 1);
    act_elems += tokens * shared_ffn / s.tp;
  }
  // Permutes move the rank's own copies (padded to capacity where the experts are); the sorts the copies received.
  const double routed_bytes = tokens * topk * h * s.element_bytes;
  c += permutes(mc, routed_bytes * (s.pad_to_capacity ? s.routed_share : 1));
  c += dispatcher_sorts(mc, routed_bytes * s.routed_share, ep, local_experts);
}

}  // namespace

Cost attention_projections(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s) {
  const double h = s.hidden, tokens = s.tokens, tp = s.tp;
  const double heads = static_cast<double>(m.heads);
  const double qk = static_cast<double>(detail::qk_head_dim(m)), v = static_cast<double>(detail::v_head_dim(m));
  if (!m.mla.enabled) {
    const double attn_params = static_cast<double>(detail::attention_params(m, detail::Biases::exclude));
    const double in_n = std::max(0.0, attn_params - heads * v * h) / h;  // q, k and v as one GEMM
    return linear(mc, s, tokens, in_n / tp, h, 1);
  }
  // Megatron-LM's MLASelfAttention (megatron/core/transformer/multi_latent_attention.py): the down projections are
  // duplicated on every TP rank (TELinear, parallel_mode 'duplicated') over its share of the sequence, the up
  // projections column-parallel over the heads on the whole sequence.
  const MlaConfig& a = m.mla;
  const double down_tokens = s.sequence_parallel ? tokens / tp : tokens;
  const double q_lora = static_cast<double>(a.q_lora_rank), kv_lora = static_cast<double>(a.kv_lora_rank);
  const double nope = static_cast<double>(a.qk_nope_head_dim), rope = static_cast<double>(a.qk_rope_head_dim);
  Cost c;
  if (a.q_lora_rank > 0) {
    c += linear(mc, s, down_tokens, q_lora, h, 1);
    c += linear(mc, s, tokens, heads * qk / tp, q_lora, 1);
  } else {
    c += linear(mc, s, tokens, heads * qk / tp, h, 1);
  }
  c += linear(mc, s, down_tokens, kv_lora + rope, h, 1);
  c += linear(mc, s, tokens, heads * (nope + v) / tp, kv_lora, 1);
  // Norms of the compressed q and kv; then RoPE on the rope channels and the assembly of contiguous query, key and
  // value for the attention kernel (fused_apply_mla_rope_for_q / _for_kv, or split, rotate and cat): q and kv are
  // read, query, key and value written. Backward moves twice that, as every elementwise kernel here.
  const double e = s.element_bytes;
  const double assembly = memory_bound_s(mc, 2 * e * down_tokens * (q_lora + kv_lora), 2) +
                          memory_bound_s(mc, e * tokens * heads / tp * (qk + nope + v + qk + qk + v), 2);
  c.forward_s += assembly;
  c.backward_s += 2 * assembly;
  return c;
}

Cost layer_body(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s, bool moe, double ep, double etp) {
  const double h = s.hidden, tokens = s.tokens, tp = s.tp;
  const double v = static_cast<double>(detail::v_head_dim(m));
  const double out_k = static_cast<double>(m.heads) * v;
  Cost c = attention_projections(mc, m, s);
  const Cost out_projection = linear(mc, s, tokens, h, out_k / tp, 1);
  c += out_projection;
  c.row_parallel_forward_s += out_projection.forward_s;
  double act_elems = 0;  // elements entering the activation function
  if (!moe) {
    const double ffn = static_cast<double>(m.ffn_hidden);
    const double up = m.mlp == MlpKind::gated ? 2 : 1;
    c += linear(mc, s, tokens, up * ffn / tp, h, 1);
    const Cost down = linear(mc, s, tokens, h, ffn / tp, 1);
    c += down;
    c.row_parallel_forward_s += down.forward_s;
    act_elems += tokens * ffn / tp;
  } else {
    add_moe_mlp(mc, m, s, ep, etp, c, act_elems);
  }
  c += elementwise_cost(mc, m, s, act_elems);
  return c;
}

double op_sac_kept_mm_forward_s(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s, bool moe) {
  double kept = 0;
  for (const detail::BlockMm& mm : detail::torchtitan_block_mms(m, moe, s.tp))
    if (mm.saved) kept += linear(mc, s, s.tokens, mm.out_width, mm.in_width, 1).forward_s;
  return kept;
}

// GEMMs, the attention core, norms, bias-dropout-adds, the activation, rotary embedding, the TP collectives, MoE
// routing and permutes.
double layer_kernels_forward(const ModelConfig& m, const MicrobatchShape& s, bool moe, bool tp_comm) {
  double k = 4;                                                     // qkv, out, up (fc1), down (fc2)
  if (moe)   // gating and routing, experts, shared experts, permute/unpermute
    k += 1 + router_forward_kernels(s.token_drop) + 2 + (m.moe.shared_experts > 0 ? 2 : 0) + 2;
  k += s.flash ? 1 : (s.dropout ? 5 : 4);                           // QK^T, softmax, [dropout], PV, context copy
  k += elementwise_kernels_forward(m, s);                            // norms, residuals, activation, RoPE
  if (m.mla.enabled)  // down and up projections instead of one qkv GEMM; the latent norms and the q/kv assembly
    k += (m.mla.q_lora_rank > 0 ? 3 : 2) + 2 + 2;
  if (tp_comm) k += 2;
  k += cp_bookkeeping(m, s).forward_kernels;
  return k;
}

}  // namespace gpuplan::perf
