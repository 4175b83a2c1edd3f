// Readers for the LayerNorm-era families: GPT-2, GPT-NeoX, Falcon, BLOOM and OPT. Defaults are those of the
// transformers configuration classes, and the layer structure that of their modeling files.
#include "io/hf_config_reader.hpp"

namespace gpuplan::detail {

namespace {

// What every LayerNorm model here shares: LayerNorm with bias, plain MLP.
void classic(ModelConfig& m) {
  m.norm = NormKind::layernorm;
  m.norm_bias = true;
  m.mlp = MlpKind::plain;
}

}  // namespace

void read_gpt2(const HfConfigReader& r, ModelConfig& m) {
  classic(m);
  m.hidden = r.integer({"n_embd", "hidden_size"});
  m.layers = r.integer({"n_layer", "num_hidden_layers"});
  m.heads = r.integer({"n_head", "num_attention_heads"});
  m.kv_heads = m.heads;
  m.vocab = r.integer({"vocab_size"});
  m.max_positions = r.integer({"n_positions", "max_position_embeddings"}, 1024);
  m.ffn_hidden = r.integer({"n_inner"}, 4 * m.hidden);  // n_inner null means 4 x n_embd
  m.activation = r.string("activation_function", "gelu_new");
  m.positions = PositionKind::learned;
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);
  // Conv1D layers c_attn, c_proj, c_fc, c_proj all carry biases.
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
}

void read_gpt_neox(const HfConfigReader& r, ModelConfig& m) {
  classic(m);
  m.hidden = r.integer({"hidden_size"});
  m.layers = r.integer({"num_hidden_layers"});
  m.heads = r.integer({"num_attention_heads"});
  m.kv_heads = m.heads;
  m.vocab = r.integer({"vocab_size"});
  m.ffn_hidden = r.integer({"intermediate_size"});
  m.max_positions = r.integer({"max_position_embeddings"}, 2048);
  m.activation = r.string("hidden_act", "gelu");
  m.positions = PositionKind::rotary;
  // embed_in and embed_out are separate unless the config ties them (GPTNeoXConfig default False).
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  m.qkv_bias = m.attn_out_bias = r.boolean("attention_bias", true);
  m.mlp_bias = true;  // dense_h_to_4h and dense_4h_to_h always have biases
}

void read_falcon(const HfConfigReader& r, const std::string& type, ModelConfig& m) {
  classic(m);
  m.hidden = r.integer({"hidden_size", "n_embed"});
  m.layers = r.integer({"num_hidden_layers", "n_layer"});
  m.heads = r.integer({"num_attention_heads", "n_head"});
  m.vocab = r.integer({"vocab_size"});
  m.ffn_hidden = r.integer({"ffn_hidden_size"}, 4 * m.hidden);
  m.activation = r.string("activation", "gelu");
  m.max_positions = r.integer({"max_position_embeddings"}, 2048);
  m.positions = r.boolean("alibi", false) ? PositionKind::alibi : PositionKind::rotary;
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = r.boolean("bias", false);
  // The original "RefinedWeb" code (Falcon-40B) always used the grouped-kv layout with two parallel norms,
  // which transformers later named new_decoder_architecture; "RefinedWebModel" (Falcon-7B) never did.
  const bool new_arch = r.boolean("new_decoder_architecture", type == "RefinedWeb");
  const bool parallel = r.boolean("parallel_attn", true);
  if (new_arch) {
    m.kv_heads = r.integer({"num_kv_heads", "n_head_kv"}, m.heads);
    m.norms_per_layer = static_cast<int>(r.integer({"num_ln_in_parallel_attn"}, 2));
  } else {
    // Multi-query: one k and one v head. Otherwise full multi-head (num_kv_heads is ignored in this layout).
    m.kv_heads = r.boolean("multi_query", true) ? 1 : m.heads;
    m.norms_per_layer = parallel ? 1 : 2;  // parallel attention and MLP read the same input_layernorm
  }
}

void read_bloom(const HfConfigReader& r, ModelConfig& m) {
  classic(m);
  m.hidden = r.integer({"hidden_size", "n_embed"});
  m.layers = r.integer({"n_layer", "num_hidden_layers"});
  m.heads = r.integer({"n_head", "num_attention_heads"});
  m.kv_heads = m.heads;
  m.vocab = r.integer({"vocab_size"});
  m.ffn_hidden = 4 * m.hidden;  // BloomMLP is fixed at 4 x hidden
  m.activation = "gelu";
  m.positions = PositionKind::alibi;
  m.max_positions = r.integer({"seq_length", "max_position_embeddings"}, 2048);
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
  m.embedding_norm = true;  // word_embeddings_layernorm
}

void read_opt(const HfConfigReader& r, ModelConfig& m) {
  classic(m);
  m.hidden = r.integer({"hidden_size"});
  m.layers = r.integer({"num_hidden_layers"});
  m.heads = r.integer({"num_attention_heads"});
  m.kv_heads = m.heads;
  m.vocab = r.integer({"vocab_size"});
  m.ffn_hidden = r.integer({"ffn_dim"});
  m.activation = r.string("activation_function", "relu");
  m.max_positions = r.integer({"max_position_embeddings"}, 2048);
  m.positions = PositionKind::learned;
  m.position_offset = 2;  // OPTLearnedPositionalEmbedding reserves two extra rows
  const std::int64_t proj = r.integer({"word_embed_proj_dim"}, m.hidden);
  m.embed_proj_dim = proj == m.hidden ? 0 : proj;
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);
  const bool bias = r.boolean("enable_bias", true);
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = bias;
  if (!r.boolean("layer_norm_elementwise_affine", true)) m.norms_per_layer = 0;
  // Post-norm models (OPT-350m, do_layer_norm_before false) have no final layer norm.
  m.final_norm = m.norms_per_layer > 0 && r.boolean("do_layer_norm_before", true) &&
                 !r.boolean("_remove_final_layer_norm", false);
}

}  // namespace gpuplan::detail
