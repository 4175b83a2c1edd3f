// The copies around Megatron-Core's split of the fused QKV projection (transformer/attention.py,
// get_query_key_value_tensors; Transformer Engine's SplitAlongDim and get_qkv_layout), counted tensor by tensor for
// one layer of 4096 local tokens in bf16.
#include <gtest/gtest.h>

#include "gpuplan/estimate.hpp"
#include "perf/elementwise_ops.hpp"
#include "test_support.hpp"

using gpuplan::test::attention_of;
using gpuplan::test::bf16_tokens;

TEST(QkvSplit, GroupedQueriesWithRotaryEmbeddingCopyTheQueryAndV) {
  // Llama-3.1-8B's attention: 32 query heads in 8 groups. The reshape of the query view [s, b, 8, 4 x 128] to
  // [s, b, 32, 128] copies it (read + write 4096 x 32 x 128 x 2 bytes); after RoPE replaced q and k, v is still a
  // strided view of the QKV output that TE makes contiguous (4096 x 8 x 128 x 2, read + write). Backward concatenates
  // dq, dk and dv into the QKV gradient: all three read and written once.
  const double q = 4096.0 * 32 * 128 * 2, v = 4096.0 * 8 * 128 * 2;
  const auto p = gpuplan::perf::qkv_split_passes(attention_of(32, 8, gpuplan::PositionKind::rotary), bf16_tokens());
  EXPECT_DOUBLE_EQ(p.forward_bytes, 2 * q + 2 * v);
  EXPECT_DOUBLE_EQ(p.forward_kernels, 2);
  EXPECT_DOUBLE_EQ(p.backward_bytes, 2 * (q + 2 * v));
  EXPECT_DOUBLE_EQ(p.backward_kernels, 1);
}

TEST(QkvSplit, MultiHeadAttentionWithRotaryEmbeddingCopiesOnlyV) {
  // Llama-2-7B's attention, 32 heads in 32 groups: the query's reshape merges a dimension of one and stays a view.
  const double t = 4096.0 * 32 * 128 * 2;   // q, k or v
  const auto p = gpuplan::perf::qkv_split_passes(attention_of(32, 32, gpuplan::PositionKind::rotary), bf16_tokens());
  EXPECT_DOUBLE_EQ(p.forward_bytes, 2 * t);
  EXPECT_DOUBLE_EQ(p.backward_bytes, 2 * 3 * t);
}

TEST(QkvSplit, MultiHeadAttentionWithoutRotaryEmbeddingMovesNothing) {
  // GPT-3's attention (learned positions, 96 heads in 96 groups): q, k and v stay interleaved views that TE takes
  // as they are (sbh3d), and its backward writes dq, dk and dv into one buffer, which SplitAlongDim returns as is.
  const auto p = gpuplan::perf::qkv_split_passes(attention_of(96, 96, gpuplan::PositionKind::learned), bf16_tokens());
  EXPECT_DOUBLE_EQ(p.forward_bytes + p.backward_bytes, 0);
}

TEST(QkvSplit, AttentionPyTorchRunsIsNotSplitThisWay) {
  gpuplan::perf::MicrobatchShape s = bf16_tokens();
  s.torch_sdpa = true;
  const auto p = gpuplan::perf::qkv_split_passes(attention_of(32, 8, gpuplan::PositionKind::rotary), s);
  EXPECT_DOUBLE_EQ(p.forward_bytes + p.backward_bytes, 0);
}
