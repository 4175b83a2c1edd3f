// Rejects configurations no real model can have, naming the field, before anything is computed from them.
#include <fmt/core.h>

#include <cstdint>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/model.hpp"

namespace gpuplan {

namespace {

// Upper limits far above any published model (largest today: hidden ~25k, ~130 layers, ~260k vocab, 256
// experts), yet low enough that products of them stay within 64-bit counts or fail through checked arithmetic.
constexpr std::int64_t kMaxLayers = 100'000;
constexpr std::int64_t kMaxWidth = 1LL << 22;      // hidden, head_dim, ranks
constexpr std::int64_t kMaxFfn = 1LL << 24;
constexpr std::int64_t kMaxHeads = 1LL << 16;
constexpr std::int64_t kMaxVocab = 1LL << 24;
constexpr std::int64_t kMaxPositions = 1LL << 26;
constexpr std::int64_t kMaxExperts = 1LL << 20;

class Checker {
 public:
  explicit Checker(const ModelConfig& m) : prefix_(m.name.empty() ? std::string() : m.name + ": ") {}

  void range(const char* field, std::int64_t value, std::int64_t lo, std::int64_t hi) const {
    if (value < lo || value > hi) fail(field, std::to_string(value), fmt::format("an integer from {} to {}", lo, hi));
  }
  [[noreturn]] void fail(const char* field, const std::string& given, const std::string& accepted) const {
    throw InputError(prefix_ + field, given, accepted);
  }

 private:
  std::string prefix_;
};

void validate_attention(const ModelConfig& m, const Checker& c) {
  c.range("heads", m.heads, 1, kMaxHeads);
  if (m.mla.enabled) {
    // Multi-head latent attention: keys and values come from a shared latent, so kv_heads plays no part.
    c.range("q_lora_rank", m.mla.q_lora_rank, 0, kMaxWidth);
    c.range("kv_lora_rank", m.mla.kv_lora_rank, 1, kMaxWidth);
    c.range("qk_nope_head_dim", m.mla.qk_nope_head_dim, 0, kMaxWidth);
    c.range("qk_rope_head_dim", m.mla.qk_rope_head_dim, 0, kMaxWidth);
    c.range("qk_nope_head_dim + qk_rope_head_dim", m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim, 1, kMaxWidth);
    c.range("v_head_dim", m.mla.v_head_dim, 1, kMaxWidth);
    return;
  }
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    c.fail("heads", fmt::format("{} (does not divide hidden {} and head_dim is not given)", m.heads, m.hidden),
           "a divisor of hidden, or an explicit head_dim");
  c.range("head_dim", m.head_dim, 0, kMaxWidth);
  c.range("kv_heads", m.kv_heads, 1, m.heads);
  if (m.heads % m.kv_heads != 0)
    c.fail("kv_heads", fmt::format("{} (does not divide heads {})", m.kv_heads, m.heads), "a divisor of heads");
}

// Megatron-Core's group_limited_topk views the scores as (groups, experts / groups) and takes top_k of the chosen
// groups' experts. No option sets the groups: the errors name the keys of the files that do.
constexpr const char* kRouterGroups = "router groups (n_group, --moe-router-num-groups)";
constexpr const char* kRouterGroupsChosen = "router groups chosen (topk_group, --moe-router-group-topk)";

void validate_router_groups(const MoeConfig& e, const Checker& c) {
  c.range(kRouterGroups, e.router_groups, 1, e.routed_experts);
  if (e.routed_experts % e.router_groups != 0)
    c.fail(kRouterGroups, fmt::format("{} (does not divide the {} experts)", e.router_groups, e.routed_experts),
           "a divisor of the routed experts");
  c.range(kRouterGroupsChosen, e.router_groups_chosen, 1, e.router_groups);
  const std::int64_t reachable = e.router_groups_chosen * (e.routed_experts / e.router_groups);
  if (e.top_k > reachable)
    c.fail(kRouterGroupsChosen,
           fmt::format("{} (its groups hold {} experts, fewer than top_k {})", e.router_groups_chosen, reachable, e.top_k),
           "enough groups to hold top_k experts");
}

void validate_moe(const ModelConfig& m, const Checker& c) {
  const auto& e = m.moe;
  c.range("experts", e.routed_experts, 0, kMaxExperts);
  if (e.routed_experts == 0) {
    if (e.top_k != 0) c.fail("top_k", std::to_string(e.top_k), "0 for a dense model (experts is 0)");
    return;
  }
  c.range("top_k", e.top_k, 1, e.routed_experts);
  c.range("expert_ffn_hidden", e.expert_ffn_hidden, 1, kMaxFfn);
  c.range("shared_experts", e.shared_experts, 0, kMaxExperts);
  if (e.shared_experts > 0) c.range("shared_expert_ffn_hidden", e.shared_expert_ffn_hidden, 1, kMaxFfn);
  c.range("first_dense_layers", e.first_dense_layers, 0, m.layers);
  c.range("layer_freq", e.layer_freq, 1, kMaxLayers);
  for (std::int64_t id : e.dense_layer_ids) c.range("dense_layer_ids", id, 0, m.layers - 1);
  validate_router_groups(e, c);
}

bool has_dense_layer(const ModelConfig& m) {
  for (std::int64_t i = 0; i < m.layers; ++i)
    if (!m.is_moe_layer(i)) return true;
  return false;
}

}  // namespace

void validate(const ModelConfig& m) {
  const Checker c(m);
  c.range("layers", m.layers, 1, kMaxLayers);
  c.range("hidden", m.hidden, 1, kMaxWidth);
  c.range("vocab", m.vocab, 1, kMaxVocab);
  validate_attention(m, c);
  validate_moe(m, c);
  // MoE configs carry an intermediate_size that no layer may use (Qwen3-MoE): only dense layers need one.
  c.range("ffn_hidden", m.ffn_hidden, has_dense_layer(m) ? 1 : 0, kMaxFfn);
  c.range("max_positions", m.max_positions, m.positions == PositionKind::learned ? 1 : 0, kMaxPositions);
  c.range("position_offset", m.position_offset, 0, kMaxPositions);
  c.range("embed_proj_dim", m.embed_proj_dim, 0, kMaxWidth);
  c.range("norms_per_layer", m.norms_per_layer, 0, 8);
}

}  // namespace gpuplan
