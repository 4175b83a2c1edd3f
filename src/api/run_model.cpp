// gpuplan model: the architecture, exact parameter counts and FLOPs per token of one model.
#include <algorithm>

#include "api/builders.hpp"
#include "api/fields.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/api.hpp"

namespace gpuplan::api {

namespace {

// Without a sequence length: the model's context, capped at 2048 (the sequence length of the Megatron-LM scaling
// runs) so that long-context models are not quoted at their 128k maximum by default.
constexpr std::int64_t kDefaultSeqCap = 2048;

const char* mlp_name(const ModelConfig& m) { return m.mlp == MlpKind::gated ? "gated" : "plain"; }
const char* norm_name(const ModelConfig& m) {
  if (m.norm == NormKind::rmsnorm) return "RMSNorm";
  return m.norm_bias ? "LayerNorm" : "LayerNorm (no bias)";
}
const char* positions_name(PositionKind p) {
  switch (p) {
    case PositionKind::learned: return "learned";
    case PositionKind::rotary: return "rotary";
    case PositionKind::alibi: return "alibi";
    case PositionKind::none: return "none";
  }
  return "none";
}

LayerParamCounts layer_counts(const LayerParams& l) {
  return {l.attention, l.mlp, l.routed_experts, l.shared_experts, l.router, l.norms, l.total()};
}

Architecture architecture(const ModelConfig& m) {
  Architecture a;
  a.layers = m.layers;
  a.hidden = m.hidden;
  a.heads = m.heads;
  a.kv_heads = m.kv_heads;
  a.head_dim = m.head_width();
  a.ffn_hidden = m.ffn_hidden;
  a.vocab = m.vocab;
  a.max_positions = m.max_positions;
  a.mlp = mlp_name(m);
  a.activation = m.activation;
  a.norm = norm_name(m);
  a.positions = positions_name(m.positions);
  a.tied_embeddings = m.tied_embeddings;
  if (m.is_moe())
    a.moe = MoeSummary{m.moe.routed_experts,  m.moe.top_k,         m.moe.expert_ffn_hidden,
                       m.moe.shared_experts,  m.moe.router_groups, m.moe.router_groups_chosen};
  if (m.mla.enabled)
    a.mla = MlaSummary{m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim,
                       m.mla.v_head_dim};
  return a;
}

}  // namespace

ModelResult run(const ModelRequest& request) {
  detail::check_bounds(request);
  const ModelConfig m = detail::resolve_model(request.model, request.overrides);
  const std::int64_t seq = request.seq_len ? *request.seq_len
                                           : (m.max_positions > 0 ? std::min(m.max_positions, kDefaultSeqCap)
                                                                  : kDefaultSeqCap);
  const ParamCounts p = count_params(m);
  const FlopsPerToken f = flops_per_token(m, seq);
  ModelResult r;
  r.name = m.name;
  r.model_type = m.model_type;
  r.architecture = architecture(m);
  r.params = ParamSummary{p.total,      p.active,       p.embedding,  p.lm_head, p.final_norm,
                          p.layers_total, p.dense_layers, p.moe_layers, {}};
  if (p.dense_layers) r.params.per_layer.dense = layer_counts(p.dense_layer);
  if (p.moe_layers) r.params.per_layer.moe = layer_counts(p.moe_layer);
  r.flops = FlopsSummary{seq, f.forward, f.training, f.six_n, f.attention_forward};
  if (auto w = detail::sequence_warning(m, seq)) r.warnings.push_back(std::move(*w));
  return r;
}

}  // namespace gpuplan::api
