// Exact unique parameter counts of decoder-only transformers, dense and mixture-of-experts.
#include <algorithm>

#include "gpuplan/model.hpp"
#include "model/checked_math.hpp"
#include "model/param_parts.hpp"

namespace gpuplan {

using detail::add;
using detail::Biases;
using detail::mul;

bool ModelConfig::is_moe_layer(std::int64_t layer_index) const {
  if (!is_moe() || layer_index < moe.first_dense_layers) return false;
  if (std::find(moe.dense_layer_ids.begin(), moe.dense_layer_ids.end(), layer_index) != moe.dense_layer_ids.end())
    return false;
  // DeepSeek's rule (modeling_deepseek: layer_idx % moe_layer_freq == 0). Qwen-MoE's decoder_sparse_step counts
  // from 1 instead; its reader lists the layers that rule leaves dense in dense_layer_ids.
  return moe.layer_freq <= 1 || layer_index % moe.layer_freq == 0;
}

std::int64_t ModelConfig::moe_layers_in(std::int64_t begin, std::int64_t end) const {
  if (!is_moe() || end <= begin) return 0;
  if (!moe.dense_layer_ids.empty()) {   // an irregular pattern: layer by layer
    std::int64_t count = 0;
    for (std::int64_t layer = begin; layer < end; ++layer) count += is_moe_layer(layer) ? 1 : 0;
    return count;
  }
  // The multiples of layer_freq in [max(begin, first_dense_layers), end), as is_moe_layer counts them.
  const std::int64_t from = std::max(begin, moe.first_dense_layers);
  if (end <= from) return 0;
  const std::int64_t freq = std::max<std::int64_t>(1, moe.layer_freq);
  auto multiples_below = [freq](std::int64_t n) { return (n + freq - 1) / freq; };   // multiples of freq in [0, n)
  return multiples_below(end) - multiples_below(from);
}

namespace {

// One norm over `width` channels: RMSNorm has a weight; LayerNorm a weight and usually a bias.
std::int64_t norm(const ModelConfig& m, std::int64_t width) {
  return m.norm == NormKind::layernorm && m.norm_bias ? mul(2, width) : width;
}

std::int64_t layer_norms(const ModelConfig& m) {
  std::int64_t n = mul(m.norms_per_layer, norm(m, m.hidden));
  if (m.qk_norm == QkNorm::per_head) n = add(n, mul(2, norm(m, detail::head_dim_of(m))));
  if (m.qk_norm == QkNorm::full) n = add(n, norm(m, mul(m.heads, detail::head_dim_of(m))), norm(m, mul(m.kv_heads, detail::head_dim_of(m))));
  if (m.mla.enabled) {
    if (m.mla.q_lora_rank > 0) n = add(n, norm(m, m.mla.q_lora_rank));
    n = add(n, norm(m, m.mla.kv_lora_rank));
  }
  return n;
}

}  // namespace

ParamCounts count_params(const ModelConfig& m) {
  validate(m);
  ParamCounts c;
  const std::int64_t width = detail::embedding_width(m);
  c.token_embedding = mul(m.vocab, width);
  if (m.positions == PositionKind::learned) c.position_embedding = mul(add(m.max_positions, m.position_offset), m.hidden);
  c.embedding = add(c.token_embedding, c.position_embedding);
  if (m.embedding_norm) c.embedding = add(c.embedding, norm(m, m.hidden));
  // OPT-350m: project_in (embed -> hidden) and project_out (hidden -> embed), both without bias.
  if (m.embed_proj_dim > 0 && m.embed_proj_dim != m.hidden) c.embedding = add(c.embedding, mul(2, width, m.hidden));
  if (!m.tied_embeddings) c.lm_head = add(mul(m.vocab, width), m.lm_head_bias ? m.vocab : 0);
  if (m.final_norm) c.final_norm = norm(m, m.hidden);

  const std::int64_t attention = detail::attention_params(m, Biases::include);
  const std::int64_t norms = layer_norms(m);
  c.dense_layer = {attention, detail::mlp_params(m, m.ffn_hidden, Biases::include), 0, 0, 0, norms};
  std::int64_t per_expert = 0;
  if (m.is_moe()) {
    per_expert = detail::mlp_params(m, m.moe.expert_ffn_hidden, Biases::include);
    c.moe_layer = {attention,
                   0,
                   mul(m.moe.routed_experts, per_expert),
                   detail::shared_expert_params(m, Biases::include),
                   detail::router_params(m, Biases::include),
                   norms};
  }
  for (std::int64_t i = 0; i < m.layers; ++i) (m.is_moe_layer(i) ? c.moe_layers : c.dense_layers) += 1;
  if (c.dense_layers == 0) c.dense_layer = {};

  c.layers_total = add(mul(c.dense_layers, c.dense_layer.total()), mul(c.moe_layers, c.moe_layer.total()));
  c.total = add(c.embedding, c.layers_total, c.final_norm, c.lm_head);
  // Per token, a MoE layer runs top_k of its routed experts; everything else runs for every token.
  const std::int64_t idle_experts = m.is_moe() ? m.moe.routed_experts - m.moe.top_k : 0;
  c.active = c.total - mul(c.moe_layers, idle_experts, per_expert);
  return c;
}

}  // namespace gpuplan
