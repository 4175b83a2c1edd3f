// Matmul FLOPs per token, in the convention of Narayanan et al. (SC'21) / Megatron-LM: see docs/flops.md.
#include <fmt/core.h>

#include "gpuplan/error.hpp"
#include "gpuplan/model.hpp"
#include "model/param_parts.hpp"

namespace gpuplan {

using detail::Biases;

FlopsPerToken flops_per_token(const ModelConfig& m, std::int64_t seq_len) {
  if (seq_len < 1 || seq_len > (1LL << 26))
    throw InputError("seq_len", std::to_string(seq_len), fmt::format("an integer from 1 to {}", 1LL << 26));
  const ParamCounts counts = count_params(m);  // validates m

  // Doubles from here on: FLOP totals of very large models exceed int64, and 2^53 precision is plenty.
  const double attention = static_cast<double>(detail::attention_params(m, Biases::exclude));
  const double dense_mlp = static_cast<double>(detail::mlp_params(m, m.ffn_hidden, Biases::exclude));
  double moe_mlp = 0;
  if (m.is_moe()) {
    const double expert = static_cast<double>(detail::mlp_params(m, m.moe.expert_ffn_hidden, Biases::exclude));
    moe_mlp = static_cast<double>(m.moe.top_k) * expert +
              static_cast<double>(detail::shared_expert_params(m, Biases::exclude)) +
              static_cast<double>(detail::router_params(m, Biases::exclude));
  }
  const double width = static_cast<double>(detail::embedding_width(m));
  const double hidden = static_cast<double>(m.hidden);
  // The logits layer is a matmul whether or not its weight is tied to the embedding; lookups are not.
  double head = static_cast<double>(m.vocab) * width;
  if (m.embed_proj_dim > 0 && m.embed_proj_dim != m.hidden) head += 2 * width * hidden;  // OPT project_in/out

  const double matmul_weights = static_cast<double>(counts.dense_layers) * (attention + dense_mlp) +
                                static_cast<double>(counts.moe_layers) * (attention + moe_mlp) + head;

  // Per layer and token: scores q.k over s keys (2 s heads qk_dim) and the weighted sum of s values
  // (2 s heads v_dim). Causal masking is not halved: the kernels compute the full s x s product.
  const double s = static_cast<double>(seq_len);
  const double heads = static_cast<double>(m.heads);
  const double per_layer_attention =
      2 * s * heads * static_cast<double>(detail::qk_head_dim(m)) + 2 * s * heads * static_cast<double>(detail::v_head_dim(m));

  FlopsPerToken f;
  f.attention_forward = static_cast<double>(m.layers) * per_layer_attention;
  f.forward = 2 * matmul_weights + f.attention_forward;
  f.training = 3 * f.forward;
  const double n = static_cast<double>(counts.active - counts.embedding - counts.lm_head) + static_cast<double>(m.vocab) * width;
  f.six_n = 6 * n;
  return f;
}

}  // namespace gpuplan
