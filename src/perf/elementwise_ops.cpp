// Norms, residual adds, the activation, RoPE and the attention output's copy, fused or eager. See
// elementwise_ops.hpp; the eager counts are what validation/torch_eager_traffic.py measures through PyTorch's
// dispatcher (bf16 activations), written here per element of 16-bit width `e` and fp32 width 4.
#include "perf/elementwise_ops.hpp"

#include "model/param_parts.hpp"
#include "perf/layer_comm.hpp"

namespace gpuplan::perf {

namespace {

// A fused kernel that reads and writes its tensors once forward; backward moves twice that in two kernels.
ElementwisePasses fused(double forward_bytes) { return {forward_bytes, 2 * forward_bytes, 1, 2}; }

void add(ElementwisePasses& total, const ElementwisePasses& per_element, double elements, double tensors = 1) {
  total.forward_bytes += per_element.forward_bytes * elements;
  total.backward_bytes += per_element.backward_bytes * elements;
  total.forward_kernels += per_element.forward_kernels * tensors;
  total.backward_kernels += per_element.backward_kernels * tensors;
}

// Hugging Face's LlamaRMSNorm (and torch's composite rms_norm): cast to fp32, pow, mean, + eps, rsqrt, multiply,
// cast back, times the weight: 4e + 28 bytes in 8 kernels; autograd's backward 8e + 76 in 16. Under fp32 training
// the two casts are no-ops.
ElementwisePasses eager_rms_norm(double e) {
  ElementwisePasses p{4 * e + 28, 8 * e + 76, 8, 16};
  if (e >= 4) p = {p.forward_bytes - 2 * (e + 4), p.backward_bytes - 2 * (e + 4), 6, 14};
  return p;
}

// The residual add (Megatron-LM's bias-dropout-add): one kernel either way, except that eager dropout is a kernel of
// its own whose output the add reads back (2e more each way, dropout's backward applying the mask).
ElementwisePasses residual_passes(bool eager, bool dropout, double e) {
  ElementwisePasses p = fused(3 * e + (dropout ? 1 : 0));
  if (eager && dropout) p = {p.forward_bytes + 2 * e, p.backward_bytes + 2 * e, 2, 3};
  return p;
}

// Per element entering the activation: gated silu(gate) * up is two kernels eager (2e + 3e), backward the two
// products' gradients and silu's (9e in 3); a plain activation is one native kernel either way.
ElementwisePasses activation_passes(MlpKind mlp, bool eager, double e) {
  if (mlp != MlpKind::gated) return fused(2 * e);
  return eager ? ElementwisePasses{5 * e, 9 * e, 2, 3} : fused(3 * e);
}

// Per element of the queries and keys: fused one kernel each; eager Hugging Face's apply_rotary_pos_emb
// (q * cos + rotate_half(q) * sin: multiply, negate half, cat, multiply, add) moves 10e in 5 kernels, backward
// 14e in 7. torchtitan's complex form moves about as much in fewer kernels.
ElementwisePasses rope_passes(bool eager, double e) {
  return eager ? ElementwisePasses{10 * e, 14 * e, 5, 7} : fused(2 * e);
}

ElementwisePasses layer_passes(const ModelConfig& m, const MicrobatchShape& s, double act_elems) {
  const double e = s.element_bytes;
  const bool eager = s.eager_elementwise;
  // Under sequence parallelism norms, dropout and residuals see tokens / tp.
  const double norm_elems = (s.sequence_parallel ? s.tokens / s.tp : s.tokens) * s.hidden;
  ElementwisePasses total;
  const double norms = static_cast<double>(m.norms_per_layer);
  add(total, norm_passes(m.norm, eager, e), norm_elems * norms, norms);
  add(total, residual_passes(eager, s.dropout, e), 2 * norm_elems, 2);
  add(total, activation_passes(m.mlp, eager, e), act_elems);
  const double heads = static_cast<double>(m.heads);
  if (m.positions == PositionKind::rotary && !m.mla.enabled) {   // MLA's RoPE: attention_projections
    const double qk = static_cast<double>(detail::qk_head_dim(m));
    const double rotated = s.tokens * (heads + static_cast<double>(m.kv_heads)) * qk / s.tp;
    add(total, rope_passes(eager, e), rotated, 2);
  }
  add(total, qkv_split_passes(m, s), 1);
  add(total, repeat_kv_passes(m, s), 1);
  // The attention output's transpose(1, 2).contiguous() (MicrobatchShape::attention_output_copied); the copy's
  // backward is a view.
  if (s.attention_output_copied)
    add(total, {2 * e, 0, 1, 0}, s.tokens * heads * static_cast<double>(detail::v_head_dim(m)) / s.tp);
  return total;
}

}  // namespace

// Megatron-Core (transformer/attention.py, get_query_key_value_tensors) views the fused QKV output as
// [s, b, groups, (heads per group + 2) x head dim], splits it along the last dimension (TE's SplitAlongDim) and
// reshapes the query to [s, b, heads, head dim]: a copy unless the heads per group or the groups are one. Rotary
// embedding replaces q and k by new tensors, leaving v a strided view, which Transformer Engine's get_qkv_layout
// (dot_product_attention/utils.py) recognises in no supported layout and makes contiguous; without rotary
// embedding multi-head attention keeps its interleaved q, k and v (sbh3d) and nothing moves, while grouped
// attention copies the query and K and V. Backward, SplitAlongDim concatenates dq, dk and dv into the QKV gradient
// (torch.cat) unless they lie in one buffer as the split left them, which separate gradients do not: what
// Megatron-Core's fused_single_qkv_rope (off by default) exists to avoid.
ElementwisePasses qkv_split_passes(const ModelConfig& m, const MicrobatchShape& s) {
  if (s.torch_sdpa || m.mla.enabled) return {};
  const double groups = static_cast<double>(m.kv_heads), per_group = static_cast<double>(m.heads) / groups;
  const bool rope = m.positions == PositionKind::rotary;
  if (!rope && per_group == 1) return {};
  const AttentionBytes b = attention_bytes(m, s);
  const double v = b.kv * static_cast<double>(detail::v_head_dim(m)) /
                   static_cast<double>(detail::qk_head_dim(m) + detail::v_head_dim(m));
  ElementwisePasses p;
  if (rope) {
    const bool query_copied = groups > 1 && per_group > 1;
    p.forward_bytes = 2 * ((query_copied ? b.q : 0) + v);
    p.forward_kernels = (query_copied ? 1 : 0) + 1;
  } else {   // q by the reshape or by TE, k and v by TE
    p.forward_bytes = 2 * (b.q + b.kv);
    p.forward_kernels = 3;
  }
  p.backward_bytes = 2 * (b.q + b.kv);
  p.backward_kernels = 1;
  return p;
}

// torchtitan's Llama attention (torchtitan/models/llama3/model/model.py, repeat_kv) expands grouped K and V to
// every query head before scaled_dot_product_attention: unsqueeze and expand are views, the reshape that merges the
// groups with their copies cannot be one and copies, reading K and V once and writing every head's copy. Backward,
// expand's gradient sums the copies back (sum_to_size): the same bytes. torch.compile keeps the copy, as the
// attention kernel reads K and V from memory.
ElementwisePasses repeat_kv_passes(const ModelConfig& m, const MicrobatchShape& s) {
  if (!s.repeat_kv) return {};
  const double grouped = detail::kv_chunk_bytes(m, s.tokens, s.tp, s.element_bytes);
  const double expanded = attention_bytes(m, s).kv;
  return {grouped + expanded, grouped + expanded, 2, 2};
}

ElementwisePasses norm_passes(NormKind norm, bool eager, double element_bytes) {
  // torch's layer_norm is one native kernel each way, as a fused one.
  if (!eager || norm == NormKind::layernorm) return fused(2 * element_bytes);
  return eager_rms_norm(element_bytes);
}

Cost elementwise_cost(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s, double act_elems) {
  return memory_bound_cost(mc, layer_passes(m, s, act_elems));
}

Cost memory_bound_cost(const Machine& mc, const ElementwisePasses& passes) {
  Cost c;
  c.forward_s = memory_bound_s(mc, passes.forward_bytes, passes.forward_kernels);
  c.backward_s = memory_bound_s(mc, passes.backward_bytes, passes.backward_kernels);
  return c;
}

double elementwise_kernels_forward(const ModelConfig& m, const MicrobatchShape& s) {
  return layer_passes(m, s, 0).forward_kernels;
}

}  // namespace gpuplan::perf
