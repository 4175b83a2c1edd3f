// Tensors Hugging Face transformers' Llama-style modules save for backward (modeling_llama.py / mixtral):
// RMSNorm upcasts to fp32, rotary embedding keeps q, k and their rotated halves, repeat_kv copies K and V to all
// heads under GQA, eager attention keeps an fp32 softmax and its 16-bit cast, the gated MLP keeps four f-wide
// tensors. LayerNorm models (GPT-2 style) keep the norm input instead of the fp32 copies.
#include "memory/activations_common.hpp"

namespace gpuplan::memory {

namespace {
constexpr const char* kHfSrc = "Hugging Face transformers modeling_llama.py, traced saved tensors";
constexpr const char* kSdpa = "torch scaled_dot_product_attention saves q, k, v, output and logsumexp";

void hf_norm(const ActivationContext& c, const Shapes& x, Ledger& g, const char* fp32_copy, const char* outputs) {
  if (c.model->norm == NormKind::rmsnorm) {
    g.add(fp32_copy, 4.0 * x.tokens * x.hidden, kHfSrc);
    g.add("RMSNorm rstd (fp32)", 4.0 * x.tokens, kHfSrc);
    g.add(outputs, 2.0 * c.element_bytes * x.tokens * x.hidden, kHfSrc);  // normalized 16-bit cast and weight * it
  } else {
    g.add(fp32_copy, c.element_bytes * x.tokens * x.hidden, kHfSrc);       // LayerNorm keeps its input
    g.add("LayerNorm mean and rstd (fp32)", 8.0 * x.tokens, kHfSrc);
    g.add(outputs, c.element_bytes * x.tokens * x.hidden, kHfSrc);
  }
}
}  // namespace

double hf_layer(const ActivationContext& c, const Shapes& x, bool moe_layer, Ledger& g) {
  const double before = g.total();
  const double tp = c.tp;
  hf_norm(c, x, g, "input norm input (fp32 copy for RMSNorm)", "input norm outputs (projection input)");
  const bool rotary = c.model->positions == PositionKind::rotary;
  const double q = x.tokens * x.q_width / tp, kv = x.tokens * x.kv_width / tp;
  if (rotary) {
    g.add("q and k before rotary, and their rotate_half", 2.0 * c.element_bytes * (q + kv), kHfSrc);
    g.add("rotated q and k", c.element_bytes * (q + kv), kHfSrc);
  } else {
    g.add("q and k", c.element_bytes * (q + kv), kHfSrc);
  }
  g.add("v", c.element_bytes * kv, kHfSrc);
  if (x.kv_width < x.q_width) g.add("repeat_kv copies of k and v (GQA)", 2.0 * c.element_bytes * q, kHfSrc);
  const double scores = x.tokens * c.keys_per_query * x.heads / tp;
  if (c.attention == Attention::flash) {
    g.add("attention output and logsumexp (fp32)", c.element_bytes * q + 4.0 * x.tokens * x.heads / tp, kSdpa);
  } else if (!c.selective) {
    g.add("softmax output (fp32)", 4.0 * scores, kHfSrc);
    g.add("softmax output cast to 16 bits", c.element_bytes * scores, kHfSrc);
    if (c.dropout) {
      g.add("attention dropout mask (1 byte)", scores, kHfSrc);
      g.add("attention dropout output", c.element_bytes * scores, kHfSrc);
    }
  }
  g.add("o_proj input (transposed copy of the attention output)", c.element_bytes * x.tokens * x.v_width / tp, kHfSrc);
  if (c.dropout) g.add("attention residual dropout mask (1 byte)", x.tokens * x.hidden, kHfSrc);
  hf_norm(c, x, g, "post-attention norm input (fp32 copy for RMSNorm)", "post-attention norm outputs (MLP input)");
  const double wide_tensors = x.gated ? 4.0 : 2.0;  // gated: gate, act(gate), up, product; plain: fc1 out, act out
  if (!moe_layer) {
    g.add(x.gated ? "gate, act(gate), up and their product" : "fc1 output and activation output",
          wide_tensors * c.element_bytes * x.tokens * x.ffn / tp, kHfSrc);
  } else {
    const ModelConfig& m = *c.model;
    const double routed = x.tokens * static_cast<double>(m.moe.top_k);
    const double fe = static_cast<double>(m.moe.expert_ffn_hidden);
    const double experts = static_cast<double>(m.moe.routed_experts);
    g.add("router logits and fp32 routing weights", (c.element_bytes + 4.0) * x.tokens * experts, "modeling_mixtral.py");
    g.add("tokens gathered per expert", c.element_bytes * routed * x.hidden, "modeling_mixtral.py");
    g.add("expert gate, act, up and product", wide_tensors * c.element_bytes * routed * fe / c.etp, "modeling_mixtral.py");
    g.add("expert outputs scaled by routing weights", c.element_bytes * routed * x.hidden, "modeling_mixtral.py");
    const double shared_f = static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden);
    if (shared_f > 0) g.add("shared expert tensors", wide_tensors * c.element_bytes * x.tokens * shared_f / tp, kHfSrc);
  }
  if (c.dropout) g.add("MLP residual dropout mask (1 byte)", x.tokens * x.hidden, kHfSrc);
  return g.total() - before;
}

}  // namespace gpuplan::memory
