#pragma once
// Architecture of a decoder-only transformer (dense or mixture-of-experts), its exact parameter counts and its
// FLOPs per token. Pure functions: no I/O here (see io/ for readers of config.json and the catalog).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuplan {

enum class MlpKind { plain, gated };            // plain: up -> act -> down; gated: (act(gate) * up) -> down
enum class NormKind { layernorm, rmsnorm };     // layernorm has weight and (optionally) bias; rmsnorm weight only
enum class PositionKind { learned, rotary, alibi, none };
enum class QkNorm { none, per_head, full };     // per_head: one head_dim-wide norm each for q and k (Qwen3);
                                                // full: norms over all q and all k channels (OLMo-2)

struct MoeConfig {
  std::int64_t routed_experts = 0;              // 0 means a dense model
  std::int64_t top_k = 0;                       // routed experts each token uses
  // Group-limited routing (DeepSeek's device- and node-limited routing): the experts form router_groups equal
  // blocks and a token's top_k come from router_groups_chosen of them (1 and 1: any experts).
  std::int64_t router_groups = 1;               // Hugging Face n_group, Megatron-LM --moe-router-num-groups
  std::int64_t router_groups_chosen = 1;        // topk_group, --moe-router-group-topk
  std::int64_t expert_ffn_hidden = 0;           // FFN width of one routed expert
  std::int64_t shared_experts = 0;              // experts every token uses (DeepSeek, Qwen2-MoE)
  std::int64_t shared_expert_ffn_hidden = 0;    // FFN width of one shared expert
  bool shared_expert_gate = false;              // Qwen2-MoE: a hidden->1 sigmoid gate on the shared expert
  bool router_bias = false;                     // DeepSeek-V3: e_score_correction_bias, one value per expert
  std::int64_t first_dense_layers = 0;          // DeepSeek first_k_dense_replace
  std::int64_t layer_freq = 1;                  // every layer_freq-th layer (after the dense ones) is MoE
  std::vector<std::int64_t> dense_layer_ids;    // Qwen-MoE mlp_only_layers: layers forced dense
};

struct MlaConfig {                              // DeepSeek multi-head latent attention
  bool enabled = false;
  std::int64_t q_lora_rank = 0;                 // 0: q is projected directly (DeepSeek-V2-Lite)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct ModelConfig {
  std::string name;                             // catalog name or path it was read from
  std::string model_type;                       // Hugging Face model_type, or "custom"
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;                    // == heads for MHA, 1 for MQA
  std::int64_t head_dim = 0;                    // may differ from hidden / heads
  std::int64_t ffn_hidden = 0;                  // FFN width of dense layers
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;               // rows of the learned position table when positions == learned
  MlpKind mlp = MlpKind::plain;
  std::string activation = "gelu";              // gelu, gelu_new, silu, relu, ...
  NormKind norm = NormKind::layernorm;
  PositionKind positions = PositionKind::rotary;
  bool tied_embeddings = false;
  // Biases.
  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  bool norm_bias = true;                        // LayerNorm bias (ignored for RMSNorm)
  bool lm_head_bias = false;
  // Norms.
  int norms_per_layer = 2;                      // 2 pre-norms; 1 for Falcon-7B's shared norm; 4 for Gemma-2
  QkNorm qk_norm = QkNorm::none;
  bool final_norm = true;
  bool embedding_norm = false;                  // BLOOM word_embeddings_layernorm
  // OPT-350m style projections between a narrow embedding and the hidden size.
  std::int64_t embed_proj_dim = 0;              // 0: none
  std::int64_t position_offset = 0;             // OPT's learned positions have 2 extra rows
  MoeConfig moe;
  MlaConfig mla;

  bool is_moe() const { return moe.routed_experts > 0; }
  // head_dim, or hidden / heads where head_dim is left 0 to follow hidden and heads.
  std::int64_t head_width() const { return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0); }
  bool is_moe_layer(std::int64_t layer_index) const;   // 0-based
  std::int64_t moe_layers_in(std::int64_t begin, std::int64_t end) const;   // MoE layers among [begin, end)
};

// Parameters of one decoder layer, split by how parallelism divides them.
struct LayerParams {
  std::int64_t attention = 0;        // q, k, v, o projections (and MLA down/up projections) with biases: TP-split
  std::int64_t mlp = 0;              // dense MLP: TP-split (0 in MoE layers)
  std::int64_t routed_experts = 0;   // all routed experts of the layer: EP x expert-TP split
  std::int64_t shared_experts = 0;   // shared experts (and their gate): TP-split like a dense MLP
  std::int64_t router = 0;           // router weights (and bias): replicated
  std::int64_t norms = 0;            // layer norms, q/k norms, MLA latent norms: replicated
  std::int64_t total() const { return attention + mlp + routed_experts + shared_experts + router + norms; }
};

struct ParamCounts {
  std::int64_t total = 0;            // unique parameters (a tied embedding counted once)
  std::int64_t active = 0;           // used per token (MoE: top_k routed experts); == total for dense models
  std::int64_t embedding = 0;        // token embedding + learned positions + embedding norm/projections
  std::int64_t token_embedding = 0;  // vocab x hidden (or x embed_proj_dim)
  std::int64_t position_embedding = 0;
  std::int64_t lm_head = 0;          // output layer when untied (0 when tied), with its bias
  std::int64_t final_norm = 0;
  std::int64_t layers_total = 0;     // sum over all decoder layers
  LayerParams dense_layer;           // one dense decoder layer
  LayerParams moe_layer;             // one MoE decoder layer (all zero for dense models)
  std::int64_t dense_layers = 0;     // how many layers are dense
  std::int64_t moe_layers = 0;       // how many are MoE
};

// Exact parameter counts. Throws InputError when the configuration is inconsistent.
ParamCounts count_params(const ModelConfig& model);

// Matmul FLOPs per token at a given sequence length (causal attention counted at full s, as Megatron-LM does:
// see docs/flops.md for the convention).
struct FlopsPerToken {
  double forward = 0;                // 2 x active matmul params + attention score/context terms + logits
  double training = 0;               // forward + backward (2 x forward) = 3 x forward
  double six_n = 0;                  // the 6N rule, with N = active non-embedding params + output layer
  double attention_forward = 0;      // the sequence-length-dependent part of `forward`
};
FlopsPerToken flops_per_token(const ModelConfig& model, std::int64_t seq_len);

// Checks the configuration for impossible values; throws InputError naming the field.
void validate(const ModelConfig& model);

}  // namespace gpuplan
