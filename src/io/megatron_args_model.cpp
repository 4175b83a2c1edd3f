// A model described by Megatron-LM's own arguments (model_type "megatron"): the argparse destinations of
// pretrain_gpt.py's model flags (num_layers, hidden_size, ..., as Megatron saves them in a checkpoint's `args`).
// The launch-script reader writes one of these for the model a script builds. Defaults are Megatron-LM's
// (megatron/training/arguments.py at the commit docs/frameworks.md names).
#include <fmt/format.h>

#include "gpuplan/error.hpp"
#include "io/hf_config_reader.hpp"

namespace gpuplan::detail {

namespace {

// ffn_hidden_size when not given: 4 x hidden, or int(8 x hidden / 3 / 64) x 64 with --swiglu (arguments.py:1320-1334).
std::int64_t default_ffn(std::int64_t hidden, bool swiglu) {
  return swiglu ? (8 * hidden / 3 / 64) * 64 : 4 * hidden;
}

void read_attention(const HfConfigReader& r, ModelConfig& m) {
  m.heads = r.integer({"num_attention_heads"});
  // --num-query-groups takes effect only with --group-query-attention (argument_utils.py).
  const bool grouped = r.boolean("group_query_attention", false);
  m.kv_heads = grouped ? r.integer({"num_query_groups"}, m.heads) : m.heads;
  if (r.has("kv_channels")) m.head_dim = r.integer({"kv_channels"});
  const bool linear_bias = r.boolean("add_bias_linear", true);
  m.qkv_bias = r.boolean("add_qkv_bias", linear_bias);
  m.attn_out_bias = linear_bias;
  m.mlp_bias = linear_bias;
  if (r.boolean("qk_layernorm", false)) m.qk_norm = QkNorm::per_head;
  if (!r.boolean("multi_latent_attention", false)) return;
  m.mla.enabled = true;
  m.kv_heads = m.heads;
  m.mla.q_lora_rank = r.integer({"q_lora_rank"}, 0);
  m.mla.kv_lora_rank = r.integer({"kv_lora_rank"}, 32);
  m.mla.qk_nope_head_dim = r.integer({"qk_head_dim"}, 128);
  m.mla.qk_rope_head_dim = r.integer({"qk_pos_emb_head_dim"}, 64);
  m.mla.v_head_dim = r.integer({"v_head_dim"}, 128);
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
}

void read_positions(const HfConfigReader& r, ModelConfig& m) {
  const std::string kind = r.string("position_embedding_type", "learned_absolute");
  if (kind == "learned_absolute") m.positions = PositionKind::learned;
  else if (kind == "rope" || kind == "yarn" || kind == "mrope") m.positions = PositionKind::rotary;
  else if (kind == "none") m.positions = PositionKind::none;
  else throw InputError(r.field("position_embedding_type"), "'" + kind + "'", "learned_absolute, rope, yarn, mrope or none");
  m.max_positions = r.integer({"max_position_embeddings"}, 0);
  if (m.positions == PositionKind::learned && m.max_positions <= 0)
    throw InputError(r.field("max_position_embeddings"), "missing",
                     "the rows of the learned position table (Megatron takes --seq-length when it is not given)");
}

void read_experts(const HfConfigReader& r, ModelConfig& m) {
  if (!r.has("num_experts")) return;
  m.moe.routed_experts = r.integer({"num_experts"});
  m.moe.top_k = r.integer({"moe_router_topk"}, 2);
  m.moe.expert_ffn_hidden = r.integer({"moe_ffn_hidden_size"}, m.ffn_hidden);
  if (r.has("moe_shared_expert_intermediate_size")) {
    m.moe.shared_experts = 1;   // Megatron builds one shared-expert MLP of this width
    m.moe.shared_expert_ffn_hidden = r.integer({"moe_shared_expert_intermediate_size"});
  }
  m.moe.first_dense_layers = r.integer({"moe_first_dense_layers"}, 0);
  m.moe.layer_freq = r.integer({"moe_layer_freq"}, 1);
  m.moe.router_bias = r.boolean("moe_router_enable_expert_bias", false);
  m.moe.router_groups = r.integer({"moe_router_num_groups"}, 1);
  m.moe.router_groups_chosen = r.integer({"moe_router_group_topk"}, 1);
}

}  // namespace

void read_megatron_args(const HfConfigReader& r, ModelConfig& m) {
  m.layers = r.integer({"num_layers"});
  m.hidden = r.integer({"hidden_size"});
  const bool swiglu = r.boolean("swiglu", false);
  m.mlp = swiglu ? MlpKind::gated : MlpKind::plain;
  m.activation = swiglu ? "silu" : "gelu";
  m.ffn_hidden = r.integer({"ffn_hidden_size"}, default_ffn(m.hidden, swiglu));
  const std::string norm = r.string("normalization", "LayerNorm");
  if (norm == "LayerNorm") m.norm = NormKind::layernorm;
  else if (norm == "RMSNorm") m.norm = NormKind::rmsnorm;
  else throw InputError(r.field("normalization"), "'" + norm + "'", "LayerNorm or RMSNorm");
  m.norm_bias = m.norm == NormKind::layernorm;
  read_attention(r, m);
  read_positions(r, m);
  m.tied_embeddings = !r.boolean("untie_embeddings_and_output_weights", false);
  m.vocab = r.integer({"vocab_size"});
  read_experts(r, m);
}

}  // namespace gpuplan::detail
