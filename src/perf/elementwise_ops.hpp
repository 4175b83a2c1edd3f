// The bandwidth-bound kernels of a decoder layer around its GEMMs and attention: norms, residual adds (with
// dropout), the activation function, rotary embedding, the copies around the attention's inputs and, in eager
// PyTorch attention, the attention output's copy. Two implementations move very different bytes:
//   fused: Megatron-Core with Transformer Engine or Apex (one kernel per norm, bias-dropout-add, activation and RoPE),
//     backward twice the forward's traffic;
//   eager: PyTorch modules that run each tensor op as a kernel of its own (Hugging Face transformers' Llama-style
//     modules, torchtitan without torch.compile). The bytes per element are counted from PyTorch's own dispatch of
//     those modules, forward and through autograd (validation/torch_eager_traffic.py).
#pragma once

#include "perf/layer_cost.hpp"

namespace gpuplan::perf {

// Bytes each element of a tensor costs in one op's kernels, forward and backward, and the kernels launched.
struct ElementwisePasses {
  double forward_bytes = 0, backward_bytes = 0;
  double forward_kernels = 0, backward_kernels = 0;
};

// Passes moving these bytes in these kernels, forward and backward, as memory-bound time.
Cost memory_bound_cost(const Machine& mc, const ElementwisePasses& passes);

// One norm, per element of its input (`element_bytes`: the activation dtype; 4 under fp32 training).
ElementwisePasses norm_passes(NormKind norm, bool eager, double element_bytes);

// The copies around Megatron-Core's split of the fused QKV projection for Transformer Engine's attention, in bytes
// per layer and microbatch on one rank (zero for attention PyTorch runs, and for MLA, whose assembly is priced with
// its projections). See qkv_split_passes in elementwise_ops.cpp.
ElementwisePasses qkv_split_passes(const ModelConfig& m, const MicrobatchShape& s);

// torchtitan's expansion of grouped K and V to every query head (MicrobatchShape::repeat_kv), per layer and
// microbatch on one rank. See repeat_kv_passes in elementwise_ops.cpp.
ElementwisePasses repeat_kv_passes(const ModelConfig& m, const MicrobatchShape& s);

// A layer's elementwise work for one microbatch on one rank; `act_elems` are the elements entering the activation
// function (tokens x FFN width on this rank).
Cost elementwise_cost(const Machine& mc, const ModelConfig& m, const MicrobatchShape& s, double act_elems);

// Kernels of that work one layer launches forward (what the host dispatches).
double elementwise_kernels_forward(const ModelConfig& m, const MicrobatchShape& s);

}  // namespace gpuplan::perf
