// Compute time of the pieces of a training step on one GPU: one GEMM (a smooth roofline with shape-dependent
// efficiency), memory-bound kernels (bytes over HBM bandwidth), the attention core, a decoder layer's body, and
// the kernels the host launches for it. See docs/estimate.md.
#pragma once

#include "gpuplan/estimate.hpp"

namespace gpuplan::perf {

// Per-GPU machine numbers the cost functions use.
struct Machine {
  double peak_flops = 0;          // FLOP/s of the training dtype
  double hbm_Bps = 0;             // bytes/s
  const PerfConstants* constants = nullptr;
  double peak16_flops = 0;        // FLOP/s of its 16-bit counterpart (what fp8 training runs in 16 bits); 0: peak_flops
};

// One GEMM (or `batch` independent GEMMs in one kernel) of M x N x K. `out_bytes` is the traffic per output
// element: a write of elem_bytes, or a read and a write of the fp32 gradient when a weight-gradient GEMM
// accumulates into it. `math_slowdown` stretches the compute side only (an fp8 gradient GEMM's split accumulator).
double gemm_s(const Machine& mc, double m, double n, double k, double batch, double elem_bytes, double out_bytes,
              double math_slowdown = 1);
double gemm_s(const Machine& mc, double m, double n, double k, double batch, double elem_bytes);
// `kernels` bandwidth-bound kernels moving `bytes` in all, at `measured_efficiency` of the HBM peak where these
// kernels were measured on the GPU (data/perf.json), otherwise at memory_bound_efficiency.
double memory_bound_s(const Machine& mc, double bytes, double kernels, double measured_efficiency = 0);

// Forward and backward time of one piece of work for one microbatch on one rank.
struct Cost {
  double forward_s = 0;
  double backward_s = 0;
  double gemm_forward_s = 0;      // the linear-layer GEMMs of the forward: what TP communication can overlap with
  // The forward GEMMs of the row-parallel linears TP overlap pipelines a reduce-scatter into (attention output
  // projection, dense MLP down projection), part of gemm_forward_s.
  double row_parallel_forward_s = 0;
  Cost& operator+=(const Cost& o) {
    forward_s += o.forward_s;
    backward_s += o.backward_s;
    gemm_forward_s += o.gemm_forward_s;
    row_parallel_forward_s += o.row_parallel_forward_s;
    return *this;
  }
};

// What one rank sees of a microbatch.
struct MicrobatchShape {
  double tokens = 0;              // micro-batch x sequence / cp on this rank
  double keys_per_query = 0;      // the whole sequence
  double micro_batch = 0;
  double local_sequence = 0;      // sequence / cp
  // Flash attention under context parallelism: keys one kernel call sees, and calls per layer (--cp-comm-type).
  double attention_keys_per_call = 0;
  double attention_calls = 1;
  double attention_head_split = 1;   // CP ranks one call's heads are split over (a2a: cp; a2a+p2p: cp_a2a)
  // Transformer Engine's bookkeeping around context-parallel attention (perf/cp_bookkeeping.hpp): the ranks of the
  // p2p ring whose partial outputs and gradients it merges (p2p: cp; a2a+p2p: cp / cp_a2a), of the all-to-all
  // whose inputs and outputs it reorders (a2a: cp; a2a+p2p: cp_a2a), and of the K/V all-gather (all_gather: cp).
  double cp_ring_ranks = 1;
  double cp_a2a_ranks = 1;
  double cp_gather_ranks = 1;
  double hidden = 0;
  double tp = 1;
  double element_bytes = 2;       // an activation element
  double gemm_element_bytes = 2;  // a GEMM operand element (1 under fp8)
  double gradient_rw_bytes = 8;   // read and write of one (fp32) main-gradient element by a weight-gradient GEMM
  bool sequence_parallel = false;
  bool dropout = false;
  bool flash = true;
  // Attention through PyTorch's scaled_dot_product_attention (Hugging Face, torch.nn and torchtitan modules) rather
  // than Transformer Engine's fused attention: sdpa_attention_efficiency, not the measured table.
  bool torch_sdpa = false;
  // Transformer Engine running the flash-attn package's FlashAttention-2 kernels (--attention-backend flash) rather
  // than cuDNN's: priced as PyTorch's, whose flash backend runs the same kernels.
  bool flash_attn_package = false;
  // PyTorch modules that run each elementwise op as a kernel of its own (elementwise_ops.hpp): Hugging Face's
  // (--impl hf) and torchtitan's without torch.compile.
  bool eager_elementwise = false;
  // The attention output is copied by the module's transpose(1, 2).contiguous() before the output projection
  // (elementwise_ops.cpp, layer_passes).
  bool attention_output_copied = false;
  // Grouped K and V expanded to every query head before the attention kernel (torchtitan's repeat_kv): a copy each
  // way (elementwise_ops.cpp, repeat_kv_passes), and the kernel and a CP ring move the expanded tensors.
  bool repeat_kv = false;
  // fp8 with dynamic tensorwise scaling (torchao's float8 training, which torchtitan runs): each cast needs the
  // tensor's amax first, a reduction over the 16-bit tensor of its own (torchao/float8/float8_utils.py,
  // tensor_to_amax: torch.max(torch.abs(x))). Transformer Engine's delayed scaling takes the amax from its history
  // and computes the next one inside the cast kernel.
  bool fp8_amax_pass = false;
  // MoE: routed copies the busiest expert rank processes over its balanced share (memory::routed_share), and
  // whether the router drops tokens beyond each expert's capacity.
  double routed_share = 1;
  bool token_drop = false;
  bool pad_to_capacity = false;   // every expert receives its capacity: the permuted buffers hold routed_share copies
  bool probs_dispatched = true;   // the routing probabilities travel with the tokens (Megatron-Core 0.13+)
  bool flex_dispatch = false;     // DeepEP / HybridEP: a token crosses to each node once (MoeDispatcher::flex)
};

// A linear layer of `batch` GEMMs, each (m x k) @ (k x n): forward, and backward as the data-gradient and the
// weight-gradient GEMMs.
Cost linear(const Machine& mc, const MicrobatchShape& s, double m, double n, double k, double batch);

// The same machine and microbatch for what fp8 training leaves in 16 bits: 16-bit GEMM operands at the 16-bit
// peak. Transformer Engine runs the attention core in bf16 unless its recipe sets fp8_dpa (Megatron-Core's
// TransformerConfig.fp8_dot_product_attention, off by default); Megatron-LM's output layer and MoE router are
// not Transformer Engine modules (and torchtitan's Float8 conversion skips the output layer).
struct SixteenBit {
  Machine mc;
  MicrobatchShape s;
};
SixteenBit sixteen_bit(const Machine& mc, const MicrobatchShape& s);
// The routing of a MoE layer's `tokens` over `experts` after the gating GEMM: top-k, softmax, the routing map and
// probabilities, the scores of the load-balancing loss and, with `token_drop`, the capacity mask.
Cost router_ops(const Machine& mc, double tokens, double experts, bool token_drop);
// Permute and unpermute of a MoE layer's routed tokens; `routed_bytes` is one copy of every routed token.
Cost permutes(const Machine& mc, double routed_bytes);
// The all-to-all dispatcher's sort of the received tokens by local expert and its undoing, with `ep` expert-parallel
// ranks each holding `local_experts`; nothing when a rank holds one expert or all of them.
Cost dispatcher_sorts(const Machine& mc, double routed_bytes, double ep, double local_experts);
// The loss over `logits` elements (tokens x vocabulary of this rank) of `element_bytes` each, as `loss` computes it:
// forward, and backward up to the logits' gradient.
Cost cross_entropy(const Machine& mc, double logits, double element_bytes, Loss loss);
// Attention core (scores, softmax, context) of one layer.
Cost attention_core(const Machine& mc, const ModelConfig& model, const MicrobatchShape& s);
// The projections that make a layer's queries, keys and values (MLA: down and up projections, their norms, RoPE
// and the assembly of contiguous q, k and v).
Cost attention_projections(const Machine& mc, const ModelConfig& model, const MicrobatchShape& s);
// One decoder layer without its attention core (projections, MLP or experts, norms, activations, residuals).
Cost layer_body(const Machine& mc, const ModelConfig& model, const MicrobatchShape& s, bool moe, double ep,
                double etp);
// torchtitan's op-level selective checkpointing (model/torchtitan_sac.hpp) keeps the outputs of a block's odd-numbered
// mms and of its attention kernel; the backward replays the rest of the block's forward. The forward time of those
// kept mms.
double op_sac_kept_mm_forward_s(const Machine& mc, const ModelConfig& model, const MicrobatchShape& s, bool moe);
// Kernels one decoder layer launches forward (what the host dispatches).
double layer_kernels_forward(const ModelConfig& model, const MicrobatchShape& s, bool moe, bool tp_comm);

}  // namespace gpuplan::perf
