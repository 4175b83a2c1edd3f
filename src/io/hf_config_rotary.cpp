// Readers for the RMSNorm, gated-MLP families (Llama and its descendants, with their MoE variants) and for
// DeepSeek's multi-head latent attention. Defaults follow the transformers configuration classes.
#include <set>

#include "gpuplan/error.hpp"
#include "io/hf_config_reader.hpp"

namespace gpuplan::detail {

namespace {

// Whether the configuration class ties lm_head to the embedding when tie_word_embeddings is absent.
bool ties_by_default(const std::string& type) {
  static const std::set<std::string> tied = {"gemma", "gemma2", "smollm3"};
  return tied.count(type) > 0;
}

// head_dim when the file does not give it: Qwen3 and Gemma classes default to a fixed width that need not
// equal hidden / heads; the others derive it (0 here means derived).
std::int64_t default_head_dim(const std::string& type) {
  if (type == "qwen3" || type == "qwen3_moe") return 128;
  if (type == "gemma" || type == "gemma2") return 256;
  return 0;
}

// Qwen-MoE: layer i is sparse when it is not in mlp_only_layers and (i + 1) is a multiple of
// decoder_sparse_step. Stored as the explicit list of dense layers.
void qwen_moe_layers(const HfConfigReader& r, ModelConfig& m) {
  const std::int64_t step = r.integer({"decoder_sparse_step"}, 1);
  if (step < 1) throw InputError(r.field("decoder_sparse_step"), std::to_string(step), "an integer >= 1");
  std::set<std::int64_t> dense;
  for (std::int64_t id : r.int_list("mlp_only_layers")) dense.insert(id);
  for (std::int64_t i = 0; i < m.layers; ++i)
    if ((i + 1) % step != 0) dense.insert(i);
  m.moe.dense_layer_ids.assign(dense.begin(), dense.end());
}

void read_moe(const HfConfigReader& r, const std::string& type, ModelConfig& m) {
  if (type == "mixtral") {
    // Every layer is sparse; an expert is as wide as the dense intermediate_size.
    m.moe.routed_experts = r.integer({"num_local_experts"}, 8);
    m.moe.top_k = r.integer({"num_experts_per_tok"}, 2);
    m.moe.expert_ffn_hidden = m.ffn_hidden;
    return;
  }
  // qwen2_moe and qwen3_moe.
  m.moe.routed_experts = r.integer({"num_experts"});
  m.moe.top_k = r.integer({"num_experts_per_tok"});
  m.moe.expert_ffn_hidden = r.integer({"moe_intermediate_size"});
  if (type == "qwen2_moe") {
    m.moe.shared_expert_ffn_hidden = r.integer({"shared_expert_intermediate_size"});
    m.moe.shared_experts = m.moe.shared_expert_ffn_hidden > 0 ? 1 : 0;
    m.moe.shared_expert_gate = m.moe.shared_experts > 0;
  }
  qwen_moe_layers(r, m);
}

}  // namespace

void read_llama_like(const HfConfigReader& r, const std::string& type, ModelConfig& m) {
  m.hidden = r.integer({"hidden_size"});
  m.layers = r.integer({"num_hidden_layers"});
  m.heads = r.integer({"num_attention_heads"});
  m.kv_heads = r.integer({"num_key_value_heads"}, m.heads);
  m.head_dim = r.integer({"head_dim"}, default_head_dim(type));
  m.ffn_hidden = r.integer({"intermediate_size"});
  m.vocab = r.integer({"vocab_size"});
  m.max_positions = r.integer({"max_position_embeddings"}, 2048);
  m.mlp = MlpKind::gated;
  m.activation = r.string("hidden_activation", r.string("hidden_act", type.rfind("gemma", 0) == 0 ? "gelu_pytorch_tanh" : "silu"));
  m.norm = NormKind::rmsnorm;
  m.norm_bias = false;
  m.positions = PositionKind::rotary;
  m.tied_embeddings = r.boolean("tie_word_embeddings", ties_by_default(type));

  // Biases: Qwen2 (and Qwen2-MoE) put them on q, k and v only; llama-style classes use attention_bias for all
  // four projections and mlp_bias for the MLP.
  if (type == "qwen2") {
    m.qkv_bias = true;
  } else if (type == "qwen2_moe") {
    m.qkv_bias = r.boolean("qkv_bias", true);
  } else {
    m.qkv_bias = m.attn_out_bias = r.boolean("attention_bias", false);
    m.mlp_bias = r.boolean("mlp_bias", false);
  }
  // Norms: Gemma-2 adds post-attention and post-feedforward norms to the two pre-norms; OLMo-2 replaces the
  // pre-norms by two post-norms (still two) and normalises all q and k channels.
  if (type == "gemma2") m.norms_per_layer = 4;
  if (type == "qwen3" || type == "qwen3_moe") m.qk_norm = QkNorm::per_head;
  if (type == "olmo2") m.qk_norm = QkNorm::full;

  if (type == "mixtral" || type == "qwen2_moe" || type == "qwen3_moe") read_moe(r, type, m);
}

void read_deepseek(const HfConfigReader& r, const std::string& type, ModelConfig& m) {
  m.hidden = r.integer({"hidden_size"});
  m.layers = r.integer({"num_hidden_layers"});
  m.heads = r.integer({"num_attention_heads"});
  m.kv_heads = m.heads;  // num_key_value_heads has no meaning under MLA
  m.ffn_hidden = r.integer({"intermediate_size"});
  m.vocab = r.integer({"vocab_size"});
  m.max_positions = r.integer({"max_position_embeddings"}, 2048);
  m.mlp = MlpKind::gated;
  m.activation = r.string("hidden_act", "silu");
  m.norm = NormKind::rmsnorm;
  m.norm_bias = false;
  m.positions = PositionKind::rotary;
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  m.qkv_bias = m.attn_out_bias = r.boolean("attention_bias", false);

  m.mla.enabled = true;
  // V2-Lite writes q_lora_rank: null, meaning q is projected directly; the class default is 1536.
  m.mla.q_lora_rank = r.is_null("q_lora_rank") ? 0 : r.integer({"q_lora_rank"}, 1536);
  m.mla.kv_lora_rank = r.integer({"kv_lora_rank"}, 512);
  m.mla.qk_nope_head_dim = r.integer({"qk_nope_head_dim"}, 128);
  m.mla.qk_rope_head_dim = r.integer({"qk_rope_head_dim"}, 64);
  m.mla.v_head_dim = r.integer({"v_head_dim"}, 128);
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;

  if (r.is_null("n_routed_experts")) return;  // null: a dense model
  m.moe.routed_experts = r.integer({"n_routed_experts"});
  m.moe.top_k = r.integer({"num_experts_per_tok"});
  m.moe.expert_ffn_hidden = r.integer({"moe_intermediate_size"});
  m.moe.shared_experts = r.integer({"n_shared_experts"}, 0);
  m.moe.shared_expert_ffn_hidden = m.moe.expert_ffn_hidden;  // each shared expert is as wide as a routed one
  m.moe.first_dense_layers = r.integer({"first_k_dense_replace"}, 0);
  m.moe.layer_freq = r.integer({"moe_layer_freq"}, 1);
  // V3's noaux_tc routing adds e_score_correction_bias, one value per routed expert.
  const std::string topk_method = r.string("topk_method", "");
  m.moe.router_bias = type == "deepseek_v3" || topk_method == "noaux_tc";
  // V2's group_limited_greedy and V3's routing first pick topk_group of n_group expert groups; V2's greedy
  // routing ignores the groups (modeling_deepseek.py, MoEGate).
  if (type == "deepseek_v3" || topk_method == "noaux_tc" || topk_method == "group_limited_greedy") {
    m.moe.router_groups = r.integer({"n_group"}, 1);   // null counts as absent: no groups
    m.moe.router_groups_chosen = r.integer({"topk_group"}, 1);
  }
}

}  // namespace gpuplan::detail
