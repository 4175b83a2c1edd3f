// Tensors Megatron-Core (with Transformer Engine) saves for backward in one GPT/Llama-style decoder layer.
// Korthikanti et al. 2022 (arXiv 2205.05198) section 4, generalized to GQA, head_dim != h/a, gated MLPs, flash
// attention, MoE and context parallelism. Each term below names the tensor; docs/memory.md derives the sum.
#include <algorithm>

#include "memory/activations_common.hpp"

namespace gpuplan::memory {

namespace {
constexpr const char* kKorthikantiSection41 = "Korthikanti et al. 2022, arXiv 2205.05198, sec. 4.1";
constexpr const char* kFlash = "FlashAttention saves q, k, v, output and fp32 logsumexp (Dao 2022)";
constexpr const char* kMoeRouter = "Megatron-Core 0.13+ moe/router.py, moe_utils.py (TopKRouter)";
constexpr const char* kMoeDispatcher = "Megatron-Core 0.13+ moe/token_dispatcher.py (alltoall), moe_utils.py permute";
constexpr const char* kMoeExperts = "Megatron-Core 0.13+ moe/experts.py TEGroupedMLP, fusions/fused_bias_swiglu.py";
constexpr const char* kTeContextParallel =
    "Transformer Engine 2.8+ dot_product_attention/context_parallel.py (AttnFuncWithCPAndQKVOA2A, "
    "AttnFuncWithCPAndKVAllGather: saved out_part / out_per_step)";
constexpr const char* kMoeShared = "Megatron-Core moe/shared_experts.py";
constexpr const char* kTeGroupedFp8 =
    "Transformer Engine 2.x module/grouped_linear.py and linear.py: under fp8 the quantized inputs are saved";

double routed_tokens(const ActivationContext& c, const Shapes& x) {
  // With sequence parallelism each rank routes its own tokens and the expert-TP group gathers them; the busiest
  // rank receives routed_share times the balanced count (imbalance, or the capacity it is padded or capped to).
  const ModelConfig& m = *c.model;
  return x.tokens * static_cast<double>(m.moe.top_k) * (c.sequence_parallel ? c.etp / c.tp : 1.0) * c.routed_share;
}

// One MoE layer's saved tensors under the alltoall dispatcher with TE grouped GEMMs.
void megatron_moe_terms(const ActivationContext& c, const Shapes& x, double seq_split, Ledger& g) {
  const ModelConfig& m = *c.model;
  const double local_tokens = x.tokens / seq_split;
  const double experts = static_cast<double>(m.moe.routed_experts);
  const double top_k = static_cast<double>(m.moe.top_k);
  const double fe = static_cast<double>(m.moe.expert_ffn_hidden);
  const double up_outputs = x.gated ? 2.0 : 1.0;
  const double routed = routed_tokens(c, x);
  // The router saves the pre-MLP norm output; a shared expert's fc1 saves the same storage, counted once.
  g.add("router input (the pre-MLP norm output)", c.element_bytes * local_tokens * x.hidden, kMoeRouter);
  g.add("router top-k probabilities (fp32) and indices (int64)", 12.0 * local_tokens * top_k, kMoeRouter);
  g.add("routing probabilities and map the dispatcher holds", (c.element_bytes + 1.0) * local_tokens * experts,
        kMoeDispatcher);
  g.add("token permutation indices (int64)", 16.0 * local_tokens * top_k, kMoeDispatcher);
  // Under fp8 TE's GroupedLinear keeps the inputs it quantized (split_quantize), as Linear does: one byte each.
  const char* inputs_source = c.gemm_input_bytes < c.element_bytes ? kTeGroupedFp8 : kMoeExperts;
  g.add("dispatched tokens (expert fc1 input)", c.gemm_input_bytes * routed * x.hidden, inputs_source);
  g.add(x.gated ? "expert gate and up outputs" : "expert fc1 output", up_outputs * c.element_bytes * routed * fe / c.etp,
        kMoeExperts);
  g.add("expert down-projection input", c.gemm_input_bytes * routed * fe / c.etp, inputs_source);
  if (c.probs_in_activation) {
    g.add("routing probability of each dispatched token", c.element_bytes * routed, kMoeExperts);
  } else {
    g.add("expert outputs kept by the weighted unpermute (before Megatron-Core 0.13)",
          c.element_bytes * local_tokens * top_k * x.hidden, kMoeDispatcher);
  }
  const double shared_f = static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden);
  if (shared_f > 0) {
    // Under fp8 the shared expert's fc1 keeps its own quantized copy of the router's input.
    if (c.gemm_input_bytes < c.element_bytes)
      g.add("shared expert fc1 input (fp8)", c.gemm_input_bytes * local_tokens * x.hidden, kTeGroupedFp8);
    g.add("shared expert up outputs", up_outputs * c.element_bytes * x.tokens * shared_f / c.tp, kMoeShared);
    g.add("shared expert down-projection input", c.gemm_input_bytes * x.tokens * shared_f / c.tp, kMoeShared);
  }
}

}  // namespace

double megatron_attention(const ActivationContext& c, const Shapes& x, Ledger& g) {
  const double before = g.total();
  const double seq_split = c.sequence_parallel ? c.tp : 1.0;   // sequence-parallel regions are split over TP
  g.add("input norm input", c.element_bytes * x.tokens * x.hidden / seq_split, kKorthikantiSection41);
  g.add("input norm statistics (fp32)", x.norm_stats * x.tokens / seq_split, "LayerNorm mean+rstd / RMSNorm rstd");
  if (x.mla) {
    mla_projection_terms(c, x, g, seq_split);
  } else {
    g.add("QKV projection input", c.gemm_input_bytes * x.tokens * x.hidden / seq_split, kKorthikantiSection41);
    g.add("query", c.element_bytes * x.tokens * x.q_width / c.tp, kKorthikantiSection41);
    g.add("key and value", c.element_bytes * x.tokens * 2.0 * x.kv_width / c.tp, "GQA: k/a of the query width");
  }
  core_attention_terms(c, x, g, kKorthikantiSection41, kFlash);
  g.add("output projection input", c.gemm_input_bytes * x.tokens * x.v_width / c.tp, kKorthikantiSection41);
  // Under a2a and all_gather context parallelism Transformer Engine saves its own copy of the attention output
  // (before the output all-to-all, or the two half-sequence outputs); the one returned is a second tensor.
  if (c.cp > 1 && (c.cp_comm == CpComm::a2a || c.cp_comm == CpComm::all_gather))
    g.add("attention output Transformer Engine keeps for its backward (a second copy under CP a2a/all_gather)",
          c.element_bytes * x.tokens * x.v_width / c.tp, kTeContextParallel);
  if (c.dropout) g.add("attention residual dropout mask", x.tokens * x.hidden / seq_split, kKorthikantiSection41);
  return g.total() - before;
}

double megatron_mlp(const ActivationContext& c, const Shapes& x, bool moe_layer, Ledger& g) {
  const double before = g.total();
  const double seq_split = c.sequence_parallel ? c.tp : 1.0;
  g.add("pre-MLP norm input", c.element_bytes * x.tokens * x.hidden / seq_split, kKorthikantiSection41);
  g.add("pre-MLP norm statistics (fp32)", x.norm_stats * x.tokens / seq_split, "LayerNorm mean+rstd / RMSNorm rstd");
  const double up_outputs = x.gated ? 2.0 : 1.0;
  if (!moe_layer) {
    g.add("MLP up-projection input", c.gemm_input_bytes * x.tokens * x.hidden / seq_split, kKorthikantiSection41);
    g.add(x.gated ? "gate and up projection outputs" : "activation input (fc1 output)",
          up_outputs * c.element_bytes * x.tokens * x.ffn / c.tp, kKorthikantiSection41);
    g.add("down-projection input", c.gemm_input_bytes * x.tokens * x.ffn / c.tp, kKorthikantiSection41);
  } else {
    megatron_moe_terms(c, x, seq_split, g);
  }
  if (c.dropout) g.add("MLP residual dropout mask", x.tokens * x.hidden / seq_split, kKorthikantiSection41);
  return g.total() - before;
}

double megatron_layer_backward_bytes(const ActivationContext& c) {
  const Shapes x = shapes_of(c);
  const double seq_split = c.sequence_parallel ? c.tp : 1.0;
  // The residual stream's gradient waits for the attention branch while the MLP branch runs backward.
  const double residual = c.element_bytes * x.tokens * x.hidden / seq_split;
  // The activation's backward writes the fc1-output gradient (gate and up); the fc2-input gradient it reads has
  // taken the place of the fc2 input freed by fc2's backward.
  const double up_outputs = x.gated ? 2.0 : 1.0;
  double widest = c.element_bytes * x.tokens * up_outputs * x.ffn / c.tp;
  const ModelConfig& m = *c.model;
  if (m.is_moe()) {
    widest = std::max(widest, c.element_bytes * routed_tokens(c, x) * up_outputs *
                                  static_cast<double>(m.moe.expert_ffn_hidden) / c.etp);
  }
  // Attention's backward: the gradients of query, key and value beside that of the projection's input.
  widest = std::max(widest, c.element_bytes * x.tokens * (x.q_width + 2.0 * x.kv_width + x.v_width) / c.tp);
  return residual + widest;
}

}  // namespace gpuplan::memory
