#pragma once
// Parameter counts of the pieces of a decoder layer. Shared by the parameter counter (with biases) and the
// FLOP counter (matmul weights only, since biases and norms are not matrix multiplications).
#include <cstdint>

#include "gpuplan/model.hpp"

namespace gpuplan::detail {

enum class Biases { include, exclude };

// q, k, v and output projections, or DeepSeek MLA's down/up projections.
std::int64_t attention_params(const ModelConfig& m, Biases biases);
// One MLP of FFN width `ffn` (plain: 2 matrices; gated: 3).
std::int64_t mlp_params(const ModelConfig& m, std::int64_t ffn, Biases biases);
// The router of a MoE layer: hidden x experts, plus DeepSeek-V3's per-expert score bias.
std::int64_t router_params(const ModelConfig& m, Biases biases);
// Shared experts and Qwen2-MoE's shared-expert gate.
std::int64_t shared_expert_params(const ModelConfig& m, Biases biases);
// Width of the token embedding (OPT-350m embeds narrower than the hidden size).
std::int64_t embedding_width(const ModelConfig& m);
// Channels per head: head_dim, or hidden / heads where head_dim is unset (0).
std::int64_t head_dim_of(const ModelConfig& m);
// Channels per head of queries/keys and of values (they differ under MLA).
std::int64_t qk_head_dim(const ModelConfig& m);
std::int64_t v_head_dim(const ModelConfig& m);
// Bytes of the keys and values of `tokens` tokens on one of `tp` tensor-parallel ranks: what one step of
// context parallelism's ring (Megatron-LM's P2P attention) sends to the next rank in the forward pass.
double kv_chunk_bytes(const ModelConfig& m, double tokens, double tp, double element_bytes);

}  // namespace gpuplan::detail
