// The memory-bound work Transformer Engine does around context-parallel attention, beside the attention kernels and
// the exchanges themselves (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, in the
// sbhd layout Megatron-Core hands it): the ring's merging of partial outputs and gradients, the reordering copies
// around the all-to-alls, and the reordering and accumulation around the K/V all-gather; and where PyTorch runs the
// attention (torchtitan), its ring attention's merges in fp32 (torch/distributed/tensor/experimental/_attention.py).
// Zero without context parallelism.
#pragma once

#include "perf/elementwise_ops.hpp"

namespace gpuplan::perf {

// Bytes moved and kernels launched for one layer and microbatch on the busiest rank.
ElementwisePasses cp_bookkeeping(const ModelConfig& model, const MicrobatchShape& s);

// The same as time: memory-bound kernels at memory_bound_efficiency of the HBM bandwidth.
Cost cp_bookkeeping_cost(const Machine& mc, const ModelConfig& model, const MicrobatchShape& s);

}  // namespace gpuplan::perf
