#include "model/param_parts.hpp"

#include "model/checked_math.hpp"

namespace gpuplan::detail {

std::int64_t head_dim_of(const ModelConfig& m) { return m.head_width(); }

std::int64_t qk_head_dim(const ModelConfig& m) {
  return m.mla.enabled ? add(m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim) : head_dim_of(m);
}

std::int64_t v_head_dim(const ModelConfig& m) { return m.mla.enabled ? m.mla.v_head_dim : head_dim_of(m); }

double kv_chunk_bytes(const ModelConfig& m, double tokens, double tp, double element_bytes) {
  const double channels = static_cast<double>(m.kv_heads) * static_cast<double>(qk_head_dim(m) + v_head_dim(m));
  return tokens * channels / tp * element_bytes;
}

namespace {

// A linear layer in -> out, with an optional bias of `out` values.
std::int64_t linear(std::int64_t in, std::int64_t out, bool bias) { return add(mul(in, out), bias ? out : 0); }

std::int64_t mla_attention(const ModelConfig& m, bool bias) {
  // DeepSeek's attention_bias (mapped to qkv_bias/attn_out_bias) applies to q_a_proj, kv_a_proj_with_mqa and
  // o_proj; q_b_proj, q_proj and kv_b_proj never have a bias.
  const auto& a = m.mla;
  const std::int64_t q_out = mul(m.heads, qk_head_dim(m));
  const std::int64_t q = a.q_lora_rank > 0
                             ? add(linear(m.hidden, a.q_lora_rank, bias && m.qkv_bias), linear(a.q_lora_rank, q_out, false))
                             : linear(m.hidden, q_out, false);
  // The compressed kv latent and the shared rotary key come out of one projection.
  const std::int64_t kv_a = linear(m.hidden, add(a.kv_lora_rank, a.qk_rope_head_dim), bias && m.qkv_bias);
  const std::int64_t kv_b = linear(a.kv_lora_rank, mul(m.heads, add(a.qk_nope_head_dim, a.v_head_dim)), false);
  const std::int64_t o = linear(mul(m.heads, a.v_head_dim), m.hidden, bias && m.attn_out_bias);
  return add(q, kv_a, kv_b, o);
}

}  // namespace

std::int64_t attention_params(const ModelConfig& m, Biases biases) {
  const bool bias = biases == Biases::include;
  if (m.mla.enabled) return mla_attention(m, bias);
  const std::int64_t q = linear(m.hidden, mul(m.heads, head_dim_of(m)), bias && m.qkv_bias);
  const std::int64_t kv = mul(2, linear(m.hidden, mul(m.kv_heads, head_dim_of(m)), bias && m.qkv_bias));
  const std::int64_t o = linear(mul(m.heads, head_dim_of(m)), m.hidden, bias && m.attn_out_bias);
  return add(q, kv, o);
}

std::int64_t mlp_params(const ModelConfig& m, std::int64_t ffn, Biases biases) {
  const bool bias = biases == Biases::include && m.mlp_bias;
  const std::int64_t up = linear(m.hidden, ffn, bias);
  const std::int64_t down = linear(ffn, m.hidden, bias);
  return m.mlp == MlpKind::gated ? add(mul(2, up), down) : add(up, down);
}

std::int64_t router_params(const ModelConfig& m, Biases biases) {
  if (!m.is_moe()) return 0;
  const bool bias = biases == Biases::include && m.moe.router_bias;
  return linear(m.hidden, m.moe.routed_experts, bias);
}

std::int64_t shared_expert_params(const ModelConfig& m, Biases biases) {
  if (m.moe.shared_experts == 0) return 0;
  const std::int64_t experts = mul(m.moe.shared_experts, mlp_params(m, m.moe.shared_expert_ffn_hidden, biases));
  // Qwen2-MoE scales the shared expert's output by sigmoid(hidden -> 1).
  return add(experts, m.moe.shared_expert_gate ? m.hidden : 0);
}

std::int64_t embedding_width(const ModelConfig& m) { return m.embed_proj_dim > 0 ? m.embed_proj_dim : m.hidden; }

}  // namespace gpuplan::detail
