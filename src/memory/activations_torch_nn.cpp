// Tensors PyTorch's own nn.TransformerEncoderLayer (norm_first, GELU) saves for backward in training, CPU.
// Each term is a row of the table in docs/activations-torch-nn.md, measured with saved_tensors_hooks.
#include "memory/activations_common.hpp"

namespace gpuplan::memory {

namespace {
constexpr const char* kNnSrc = "docs/activations-torch-nn.md (measured with saved_tensors_hooks)";
}

double torch_nn_layer(const ActivationContext& c, const Shapes& x, Ledger& g) {
  const double before = g.total();
  const double bsh = x.tokens * x.hidden;           // residual-stream elements
  const double q = x.tokens * x.q_width;       // q, k, v elements (MHA: == bsh)
  const double ff = x.tokens * x.ffn;
  const double scores = x.tokens * c.keys_per_query * x.heads;
  const double ce = c.element_bytes;                       // 4 in fp32, 2 for autocast's bf16 matmul side
  const bool bf16 = !c.fp32_compute;
  g.add("norm1 input (fp32 residual stream)", 4.0 * bsh, kNnSrc);
  g.add("norm1 mean and rstd (fp32)", 8.0 * x.tokens, kNnSrc);
  g.add("in_proj input", ce * bsh, kNnSrc);
  g.add("q / sqrt(head_dim) scalar (float64)", 8.0, kNnSrc);
  g.add("scaled query", ce * q, kNnSrc);
  if (x.tokens > 1) {
    g.add("key (contiguous copy)", ce * q, kNnSrc);
    g.add("value (contiguous copy)", ce * q, kNnSrc);
  } else {
    g.add("in_proj output (k, v are views of it)", 3.0 * ce * q, kNnSrc);
  }
  if (c.attention == Attention::flash) {
    g.add("attention output and logsumexp (fp32)", ce * q + 4.0 * x.tokens * x.heads, kNnSrc);
  } else {
    g.add("softmax output", ce * scores, kNnSrc);
    if (c.dropout) {
      g.add("attention dropout mask (input dtype, CPU dropout)", ce * scores, kNnSrc);
      g.add("attention dropout output", ce * scores, kNnSrc);
    }
  }
  g.add("out_proj input", ce * q, kNnSrc);
  if (c.dropout) g.add("dropout1 mask (input dtype)", ce * bsh, kNnSrc);
  g.add("norm2 input (fp32 residual stream)", 4.0 * bsh, kNnSrc);
  g.add("norm2 mean and rstd (fp32)", 8.0 * x.tokens, kNnSrc);
  g.add("linear1 input", ce * bsh, kNnSrc);
  g.add("gelu input (linear1 output)", ce * ff, kNnSrc);
  if (c.dropout) g.add("MLP dropout mask (input dtype)", ce * ff, kNnSrc);
  g.add("linear2 input", ce * ff, kNnSrc);
  if (c.dropout) g.add("dropout2 mask (input dtype)", ce * bsh, kNnSrc);
  if (bf16) {
    // Autocast casts each weight once per forward; the bf16 copies are saved by the linears.
    const double weights = 3.0 * x.hidden * x.q_width + x.q_width * x.hidden + 2.0 * x.hidden * x.ffn;
    g.add("autocast bf16 copies of the layer's weights", 2.0 * weights, kNnSrc);
  }
  return g.total() - before;
}

}  // namespace gpuplan::memory
