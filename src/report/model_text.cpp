// What `gpuplan model` prints: the architecture, exact parameter counts and FLOPs per token.
#include <fmt/format.h>

#include "gpuplan/api.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api {

namespace {

std::string count(std::int64_t n) { return fmt::format("{:>10}  ({})", format_count(static_cast<double>(n)), n); }

std::string layer_text(const LayerParamCounts& l) {
  std::string s = fmt::format("{} = attention {}", format_count(static_cast<double>(l.total)),
                              format_count(static_cast<double>(l.attention)));
  if (l.mlp) s += fmt::format(" + mlp {}", format_count(static_cast<double>(l.mlp)));
  if (l.routed_experts) s += fmt::format(" + routed experts {}", format_count(static_cast<double>(l.routed_experts)));
  if (l.shared_experts) s += fmt::format(" + shared experts {}", format_count(static_cast<double>(l.shared_experts)));
  if (l.router) s += fmt::format(" + router {}", l.router);
  return s + fmt::format(" + norms {}", l.norms);
}

std::string architecture_text(const ModelResult& r) {
  const Architecture& a = r.architecture;
  std::string out = fmt::format("model: {} ({})\narchitecture:\n", r.name, r.model_type);
  out += fmt::format("  {} layers, hidden {}, vocab {}\n", a.layers, a.hidden, a.vocab);
  if (a.mla) {
    out += fmt::format("  attention: MLA, {} heads, q_lora_rank {}, kv_lora_rank {}, qk head dim {}+{}, v head dim {}\n",
                       a.heads, a.mla->q_lora_rank, a.mla->kv_lora_rank, a.mla->qk_nope_head_dim,
                       a.mla->qk_rope_head_dim, a.mla->v_head_dim);
  } else {
    out += fmt::format("  attention: {} heads, {} kv heads, head dim {}\n", a.heads, a.kv_heads, a.head_dim);
  }
  out += fmt::format("  mlp: {} ({}), FFN {}; {}; {} positions; {} embeddings\n", a.mlp, a.activation, a.ffn_hidden,
                     a.norm, a.positions, a.tied_embeddings ? "tied" : "untied");
  if (a.moe) {
    const std::string groups = a.moe->router_groups > 1 ? fmt::format(" from {} of {} groups", a.moe->router_groups_chosen,
                                                                      a.moe->router_groups)
                                                        : "";
    out += fmt::format("  experts: {} routed (top {}{}), FFN {}; {} shared; {} dense + {} MoE layers\n",
                       a.moe->routed_experts, a.moe->top_k, groups, a.moe->expert_ffn_hidden, a.moe->shared_experts,
                       r.params.dense_layers, r.params.moe_layers);
  }
  return out;
}

}  // namespace

std::string to_text(const ModelResult& r) {
  const ParamSummary& p = r.params;
  std::string out = architecture_text(r);
  out += "parameters:\n";
  out += fmt::format("  total       {}\n", count(p.total));
  out += fmt::format("  active      {}\n", count(p.active));
  out += fmt::format("  embedding   {}\n", count(p.embedding));
  out += fmt::format("  lm head     {}{}\n", count(p.lm_head),
                     r.architecture.tied_embeddings ? "  (tied to the embedding)" : "");
  if (p.per_layer.dense) out += fmt::format("  per dense layer: {}\n", layer_text(*p.per_layer.dense));
  if (p.per_layer.moe) out += fmt::format("  per MoE layer:   {}\n", layer_text(*p.per_layer.moe));
  const FlopsSummary& f = r.flops;
  out += fmt::format("FLOPs per token at sequence length {} (matmuls, attention at full s):\n", f.seq_len);
  out += fmt::format("  forward     {:.4g}  (attention scores/context {:.4g})\n", f.per_token_forward,
                     f.attention_forward);
  out += fmt::format("  training    {:.4g}  (3 x forward; 6N = {:.4g})\n", f.per_token_training, f.six_n);
  for (const auto& w : r.warnings) out += fmt::format("Warning: {}\n", w);
  return out;
}

}  // namespace gpuplan::api
