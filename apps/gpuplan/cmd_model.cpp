// gpuplan model: the architecture, exact parameter counts and FLOPs per token of one model.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/units.hpp"
#include "model_options.hpp"

namespace gpuplan::cli {

namespace {

// Without --seq-len: the model's context, capped at 2048 (the sequence length of the Megatron-LM scaling
// runs) so that long-context models are not quoted at their 128k maximum by default.
constexpr std::int64_t kDefaultSeqCap = 2048;

struct ModelCommand {
  ModelOptions model;
  std::int64_t seq_len = 0;
  bool json = false;
};

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

nlohmann::json layer_json(const LayerParams& l) {
  return {{"attention", l.attention}, {"mlp", l.mlp},       {"routed_experts", l.routed_experts},
          {"shared_experts", l.shared_experts}, {"router", l.router}, {"norms", l.norms},
          {"total", l.total()}};
}

std::string count(std::int64_t n) { return fmt::format("{:>10}  ({})", format_count(static_cast<double>(n)), n); }

std::string layer_text(const LayerParams& l) {
  std::string s = fmt::format("{} = attention {}", format_count(static_cast<double>(l.total())),
                              format_count(static_cast<double>(l.attention)));
  if (l.mlp) s += fmt::format(" + mlp {}", format_count(static_cast<double>(l.mlp)));
  if (l.routed_experts) s += fmt::format(" + routed experts {}", format_count(static_cast<double>(l.routed_experts)));
  if (l.shared_experts) s += fmt::format(" + shared experts {}", format_count(static_cast<double>(l.shared_experts)));
  if (l.router) s += fmt::format(" + router {}", l.router);
  return s + fmt::format(" + norms {}", l.norms);
}

void print_text(const ModelConfig& m, const ParamCounts& p, const FlopsPerToken& f, std::int64_t seq) {
  fmt::print("model: {} ({})\n", m.name, m.model_type);
  fmt::print("architecture:\n");
  fmt::print("  {} layers, hidden {}, vocab {}\n", m.layers, m.hidden, m.vocab);
  if (m.mla.enabled) {
    fmt::print("  attention: MLA, {} heads, q_lora_rank {}, kv_lora_rank {}, qk head dim {}+{}, v head dim {}\n",
               m.heads, m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim,
               m.mla.v_head_dim);
  } else {
    fmt::print("  attention: {} heads, {} kv heads, head dim {}\n", m.heads, m.kv_heads, m.head_width());
  }
  fmt::print("  mlp: {} ({}), FFN {}; {}; {} positions; {} embeddings\n", mlp_name(m), m.activation, m.ffn_hidden,
             norm_name(m), positions_name(m.positions), m.tied_embeddings ? "tied" : "untied");
  if (m.is_moe())
    fmt::print("  experts: {} routed (top {}), FFN {}; {} shared; {} dense + {} MoE layers\n", m.moe.routed_experts,
               m.moe.top_k, m.moe.expert_ffn_hidden, m.moe.shared_experts, p.dense_layers, p.moe_layers);
  fmt::print("parameters:\n");
  fmt::print("  total       {}\n", count(p.total));
  fmt::print("  active      {}\n", count(p.active));
  fmt::print("  embedding   {}\n", count(p.embedding));
  fmt::print("  lm head     {}{}\n", count(p.lm_head), m.tied_embeddings ? "  (tied to the embedding)" : "");
  if (p.dense_layers) fmt::print("  per dense layer: {}\n", layer_text(p.dense_layer));
  if (p.moe_layers) fmt::print("  per MoE layer:   {}\n", layer_text(p.moe_layer));
  fmt::print("FLOPs per token at sequence length {} (matmuls, attention at full s):\n", seq);
  fmt::print("  forward     {:.4g}  (attention scores/context {:.4g})\n", f.forward, f.attention_forward);
  fmt::print("  training    {:.4g}  (3 x forward; 6N = {:.4g})\n", f.training, f.six_n);
}

void print_json(const ModelConfig& m, const ParamCounts& p, const FlopsPerToken& f, std::int64_t seq) {
  nlohmann::json arch = {{"layers", m.layers},          {"hidden", m.hidden},
                         {"heads", m.heads},            {"kv_heads", m.kv_heads},
                         {"head_dim", m.head_width()},     {"ffn_hidden", m.ffn_hidden},
                         {"vocab", m.vocab},            {"max_positions", m.max_positions},
                         {"mlp", mlp_name(m)},          {"activation", m.activation},
                         {"norm", norm_name(m)},        {"positions", positions_name(m.positions)},
                         {"tied_embeddings", m.tied_embeddings}};
  if (m.is_moe())
    arch["moe"] = {{"routed_experts", m.moe.routed_experts}, {"top_k", m.moe.top_k},
                   {"expert_ffn_hidden", m.moe.expert_ffn_hidden}, {"shared_experts", m.moe.shared_experts}};
  nlohmann::json per_layer = nlohmann::json::object();
  if (p.dense_layers) per_layer["dense"] = layer_json(p.dense_layer);
  if (p.moe_layers) per_layer["moe"] = layer_json(p.moe_layer);
  const nlohmann::json out = {
      {"name", m.name},
      {"model_type", m.model_type},
      {"architecture", arch},
      {"params",
       {{"total", p.total}, {"active", p.active}, {"embedding", p.embedding}, {"lm_head", p.lm_head},
        {"final_norm", p.final_norm}, {"layers_total", p.layers_total}, {"dense_layers", p.dense_layers},
        {"moe_layers", p.moe_layers}, {"per_layer", per_layer}}},
      {"flops",
       {{"seq_len", seq}, {"per_token_forward", f.forward}, {"per_token_training", f.training},
        {"six_n", f.six_n}, {"attention_forward", f.attention_forward}}}};
  fmt::print("{}\n", out.dump(2));
}

void run(const ModelCommand& c) {
  const ModelConfig m = c.model.resolve();
  const std::int64_t seq = c.seq_len > 0 ? c.seq_len
                                         : (m.max_positions > 0 ? std::min(m.max_positions, kDefaultSeqCap)
                                                                : kDefaultSeqCap);
  const ParamCounts p = count_params(m);
  const FlopsPerToken f = flops_per_token(m, seq);
  if (c.json)
    print_json(m, p, f, seq);
  else
    print_text(m, p, f, seq);
}

}  // namespace

void add_model_command(CLI::App& app) {
  auto state = std::make_shared<ModelCommand>();
  auto* cmd = app.add_subcommand("model", "Architecture, exact parameter counts and FLOPs per token of a model");
  state->model.add_to(*cmd, /*positional_model=*/true);
  cmd->add_option("--seq-len", state->seq_len,
                  "Sequence length for FLOPs per token (tokens; default: the model's max positions, at most 2048)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 26));
  cmd->add_flag("--json", state->json, "Print JSON instead of text");
  cmd->callback([state] { run(*state); });
}

}  // namespace gpuplan::cli
