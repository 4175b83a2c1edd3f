#pragma once
// Shapes and shared attention terms used by each implementation's activation table.
#include "memory/internal.hpp"

namespace gpuplan::memory {

struct Shapes {
  double tokens = 0;     // s x b on this rank (before any sequence-parallel split)
  double hidden = 0;
  double heads = 0;
  double q_width = 0;    // a x head_dim (MLA: a x (nope + rope))
  double kv_width = 0;   // width of K and of V (GQA: k x head_dim)
  double v_width = 0;    // attention output width (a x head_dim, MLA: a x v_head_dim)
  double ffn = 0;        // dense FFN width
  bool gated = false;
  bool mla = false;
  double norm_stats = 8; // fp32 bytes per token a norm keeps: LayerNorm mean + rstd, RMSNorm rstd only
};
Shapes shapes_of(const ActivationContext& c);

// Core attention (scores/softmax/dropout or the flash-attention statistics), split over TP.
void core_attention_terms(const ActivationContext& c, const Shapes& x, Ledger& g, const char* eager_source,
                          const char* flash_source);
// DeepSeek MLA projections (down/up projections and latent norms).
void mla_projection_terms(const ActivationContext& c, const Shapes& x, Ledger& g, double seq_split);

double megatron_attention(const ActivationContext& c, const Shapes& x, Ledger& g);
double megatron_mlp(const ActivationContext& c, const Shapes& x, bool moe_layer, Ledger& g);
// The most one Megatron-Core layer's backward allocates beyond what it frees (the widest gradient it writes).
double megatron_layer_backward_bytes(const ActivationContext& c);
double hf_layer(const ActivationContext& c, const Shapes& x, bool moe_layer, Ledger& g);
// What a block keeps under torchtitan's op-level selective checkpointing (model/torchtitan_sac.hpp).
double torchtitan_op_sac_layer(const ActivationContext& c, const Shapes& x, bool moe_layer, Ledger& g);
double torch_nn_layer(const ActivationContext& c, const Shapes& x, Ledger& g);

}  // namespace gpuplan::memory
