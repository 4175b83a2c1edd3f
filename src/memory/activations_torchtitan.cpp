// Tensors a torchtitan transformer block keeps under its op-level selective activation checkpointing
// (model/torchtitan_sac.hpp): the checkpoint's input, the outputs of the odd-numbered mms, the attention kernel's
// outputs, and the outputs of the collectives in the save list. Everything else is rebuilt in the backward.
#include "memory/activations_common.hpp"
#include "model/torchtitan_sac.hpp"

namespace gpuplan::memory {

namespace {
constexpr const char* kOpSac =
    "torchtitan distributed/activation_checkpoint.py _apply_op_sac: kept: the save list but every second mm";
}  // namespace

double torchtitan_op_sac_layer(const ActivationContext& c, const Shapes& x, bool moe_layer, Ledger& g) {
  const double before = g.total();
  const double e = c.element_bytes, tokens = x.tokens;
  const double seq_split = c.sequence_parallel ? c.tp : 1.0;
  g.add("block input (kept by the checkpoint)", e * tokens * x.hidden / seq_split, kOpSac);
  double saved_width = 0;
  for (const detail::BlockMm& mm : detail::torchtitan_block_mms(*c.model, moe_layer, c.tp))
    if (mm.saved) saved_width += mm.out_width;
  g.add("outputs of the 1st, 3rd, ... mm", e * tokens * saved_width, kOpSac);
  if (c.attention == Attention::flash) {
    g.add("attention output and logsumexp (fp32)", e * tokens * x.v_width / c.tp + 4.0 * tokens * x.heads / c.tp,
          kOpSac);
  } else {   // the math kernel returns its attention probabilities beside the output
    g.add("attention output and probabilities",
          e * tokens * x.v_width / c.tp + e * tokens * c.keys_per_query * x.heads / c.tp, kOpSac);
  }
  // Sequence parallelism reduce-scatters the attention's and the MLP's outputs.
  if (c.tp > 1) g.add("reduce-scatter outputs (attention and MLP)", 2.0 * e * tokens * x.hidden / c.tp, kOpSac);
  if (moe_layer && c.ep > 1) {
    const double routed = tokens * static_cast<double>(c.model->moe.top_k);
    g.add("all-to-all outputs (tokens dispatched and combined)", e * routed * x.hidden * (c.routed_share + 1.0),
          kOpSac);
  }
  return g.total() - before;
}

}  // namespace gpuplan::memory
