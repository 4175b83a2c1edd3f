// One pipeline stage of a Megatron-Core + Transformer Engine training step, allocation by allocation, replayed on
// PyTorch's caching allocator (caching_allocator.hpp) to find what it reserves beyond what it allocates. The order
// follows the frameworks' source:
//  - start-up: each weight is created on the GPU, then copied into the distributed optimizer's contiguous parameter
//    and gradient buffers and freed (megatron/core/distributed/param_and_grad_buffer.py, which lays the parameters
//    out in reverse order and pads the buffer to a multiple of the data-parallel size); each rank then clones the
//    fp32 main copy of its shard of every parameter, weights with decay first (megatron/core/optimizer);
//  - each microbatch: the forward of a dense GPT layer with Transformer Engine modules (norm, the sequence-parallel
//    all-gather, the QKV GEMM, flash attention, the output projection and its reduce-scatter, the MLP), the saved
//    tensors kept until the layer's backward; the backward frees them as it goes and gathers again what the
//    weight gradients need; Transformer Engine keeps one weight-gradient buffer per weight shape; the 1F1B schedule
//    sets how many microbatches are in flight;
//  - the first optimizer step: Adam's moments are allocated then, lazily, per parameter shard (exp_avg, exp_avg_sq:
//    torch / Transformer Engine FusedAdam), and land in what the first iteration's activations left cached.
#pragma once

#include <cstdint>

namespace gpuplan::memory {

struct ReplayShape {
  std::int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0;
  std::int64_t vocab = 0;               // padded, before the TP split
  bool gated_mlp = true;                // SwiGLU: the up-projection is twice the FFN width
  bool output_layer = true;             // the last stage has its own output weights (untied, or pp > 1)
  std::int64_t tokens = 0;              // sequence x micro-batch
  std::int64_t tp = 1;
  bool sequence_parallel = false;
  std::int64_t pp = 1, stage = 0, layers = 0;
  std::int64_t shard_ranks = 1;         // ranks sharing the optimizer states
  bool distributed_optimizer = true;    // --use-distributed-optimizer: weights moved into a contiguous buffer
  bool persistent_wgrad_buffers = true; // Transformer Engine 2.3 on: one weight-gradient buffer per weight shape
  std::int64_t microbatches = 1;        // per step
  std::int64_t optimizer_moments = 2;   // fp32 states per parameter the optimizer allocates at its first step
  double grad_bytes = 4;                // the gradient buffer's element
  double logits_bytes = 0;              // what the last stage keeps for the loss, one microbatch
  std::int64_t max_ranks = 8;           // shard ranks replayed at most
};

// Microbatches a replay of this stage runs per iteration: those in flight under 1F1B and one more, which reuses the
// first one's blocks; later ones repeat the pattern.
std::int64_t replayed_microbatches(const ReplayShape& shape);

struct ReplayPeaks {
  double allocated = 0;                 // torch.cuda.max_memory_allocated of the replay
  double reserved = 0;                  // torch.cuda.max_memory_reserved
};

// One data-parallel rank (its optimizer shard) of the stage, over three iterations.
ReplayPeaks replay_megatron_stage(const ReplayShape& shape, std::int64_t shard_rank);

// The most any rank reserves beyond what it allocates: ranks differ only in their optimizer shard; up to max_ranks
// spread over the shard group are replayed.
double replayed_fragmentation(const ReplayShape& shape);

}  // namespace gpuplan::memory
