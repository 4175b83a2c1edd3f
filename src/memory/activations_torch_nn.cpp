// Tensors PyTorch's own nn.TransformerEncoderLayer (norm_first, GELU) saves for backward in training, CPU.
// Each term is a row of the table in docs/activations-torch-nn.md, measured with saved_tensors_hooks.
#include "memory/activations_common.hpp"

namespace gpuplan::memory {

namespace {
constexpr const char* kSrc = "docs/activations-torch-nn.md (measured with saved_tensors_hooks)";
}

double torch_nn_layer(const ActivationContext& c, const Shapes& x, Ledger& g) {
  const double before = g.total();
  const double bsh = x.tokens * x.hidden;           // residual-stream elements
  const double q = x.tokens * x.q_width;       // q, k, v elements (MHA: == bsh)
  const double ff = x.tokens * x.ffn;
  const double scores = x.tokens * c.keys_per_query * x.heads;
  const double ce = c.element_bytes;                       // 4 in fp32, 2 for autocast's bf16 matmul side
  const bool bf16 = !c.fp32_compute;
  g.add("norm1 input (fp32 residual stream)", 4.0 * bsh, kSrc);
  g.add("norm1 mean and rstd (fp32)", 8.0 * x.tokens, kSrc);
  g.add("in_proj input", ce * bsh, kSrc);
  g.add("q / sqrt(head_dim) scalar (float64)", 8.0, kSrc);
  g.add("scaled query", ce * q, kSrc);
  if (x.tokens > 1) {
    g.add("key (contiguous copy)", ce * q, kSrc);
    g.add("value (contiguous copy)", ce * q, kSrc);
  } else {
    g.add("in_proj output (k, v are views of it)", 3.0 * ce * q, kSrc);
  }
  if (c.attention == Attention::flash) {
    g.add("attention output and logsumexp (fp32)", ce * q + 4.0 * x.tokens * x.heads, kSrc);
  } else {
    g.add("softmax output", ce * scores, kSrc);
    if (c.dropout) {
      g.add("attention dropout mask (input dtype, CPU dropout)", ce * scores, kSrc);
      g.add("attention dropout output", ce * scores, kSrc);
    }
  }
  g.add("out_proj input", ce * q, kSrc);
  if (c.dropout) g.add("dropout1 mask (input dtype)", ce * bsh, kSrc);
  g.add("norm2 input (fp32 residual stream)", 4.0 * bsh, kSrc);
  g.add("norm2 mean and rstd (fp32)", 8.0 * x.tokens, kSrc);
  g.add("linear1 input", ce * bsh, kSrc);
  g.add("gelu input (linear1 output)", ce * ff, kSrc);
  if (c.dropout) g.add("MLP dropout mask (input dtype)", ce * ff, kSrc);
  g.add("linear2 input", ce * ff, kSrc);
  if (c.dropout) g.add("dropout2 mask (input dtype)", ce * bsh, kSrc);
  if (bf16) {
    // Autocast casts each weight once per forward; the bf16 copies are saved by the linears.
    const double weights = 3.0 * x.hidden * x.q_width + x.q_width * x.hidden + 2.0 * x.hidden * x.ffn;
    g.add("autocast bf16 copies of the layer's weights", 2.0 * weights, kSrc);
  }
  return g.total() - before;
}

}  // namespace gpuplan::memory
