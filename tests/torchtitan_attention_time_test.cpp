// The copies around torchtitan's attention (torchtitan/models/llama3/model/model.py): repeat_kv expands grouped K
// and V to every query head before PyTorch's attention (unsqueeze, expand, reshape), counted for one layer of 4096
// local tokens in bf16 with Llama-3.1-8B's 32 query heads in 8 groups of head dim 128; the output's
// transpose(1, 2).contiguous() copies only what eager attention returns.
#include <gtest/gtest.h>

#include "gpuplan/estimate.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/elementwise_ops.hpp"
#include "perf/layer_comm.hpp"
#include "test_support.hpp"

namespace torchtitan_attention_time_test {

gpuplan::ModelConfig llama_attention(std::int64_t kv_heads) { return gpuplan::test::attention_of(32, kv_heads); }

gpuplan::perf::MicrobatchShape torchtitan_tokens() {
  gpuplan::perf::MicrobatchShape s = gpuplan::test::bf16_tokens();
  s.torch_sdpa = true;
  s.repeat_kv = true;
  return s;
}

// K and V of 8 heads, and their copies for 32, in bytes.
constexpr double kGrouped = 4096.0 * 2 * 8 * 128 * 2;
constexpr double kExpanded = 4096.0 * 2 * 32 * 128 * 2;

}  // namespace torchtitan_attention_time_test

TEST(RepeatKv, TheReshapeCopiesKAndVForEveryQueryHeadAndItsGradientSumsThemBack) {
  // Forward: the reshape of the expanded view reads K (and V) once and writes 4 copies; backward, expand's gradient
  // reads the 4 copies' gradients and writes their sum. One kernel per tensor each way.
  using namespace torchtitan_attention_time_test;
  const auto p = gpuplan::perf::repeat_kv_passes(llama_attention(8), torchtitan_tokens());
  EXPECT_DOUBLE_EQ(p.forward_bytes, kGrouped + kExpanded);
  EXPECT_DOUBLE_EQ(p.backward_bytes, kGrouped + kExpanded);
  EXPECT_DOUBLE_EQ(p.forward_kernels, 2);
  EXPECT_DOUBLE_EQ(p.backward_kernels, 2);
}

TEST(RepeatKv, AContextParallelRingPassesTheExpandedKeysAndValues) {
  // torchtitan's context parallelism replaces scaled_dot_product_attention, which receives the repeated K and V:
  // each hop of the ring carries the 32 heads' copies, not the 8 heads the projections made.
  using namespace torchtitan_attention_time_test;
  gpuplan::Layout l;
  l.cp = 2;
  gpuplan::perf::LayerComm out;
  double sent = 0;
  gpuplan::perf::cp_layer_comm(llama_attention(8), l, torchtitan_tokens(), gpuplan::GroupPlacement{2, 2, 1},
                               [&](gpuplan::Collective, double bytes, const gpuplan::GroupPlacement&) {
                                 sent = bytes;
                                 return 1.0;
                               },
                               out);
  EXPECT_DOUBLE_EQ(sent, kExpanded);
}

TEST(RepeatKv, OnlyTorchtitanRepeatsAndOnlyGroupedHeads) {
  // Megatron-Core hands grouped K and V to Transformer Engine, whose kernels read each group once; multi-head
  // attention has nothing to repeat (repeat_kv returns its input when n_rep is 1).
  gpuplan::EstimateInputs in;
  in.memory.model = gpuplan::model_from_catalog("llama-3.1-8b");
  gpuplan::Layout l;
  l.framework = gpuplan::Framework::torchtitan;
  EXPECT_TRUE(gpuplan::perf::microbatch_shape(in, l).repeat_kv);
  l.framework = gpuplan::Framework::megatron;
  EXPECT_FALSE(gpuplan::perf::microbatch_shape(in, l).repeat_kv);
  in.memory.model = gpuplan::model_from_catalog("llama-2-7b");
  l.framework = gpuplan::Framework::torchtitan;
  EXPECT_FALSE(gpuplan::perf::microbatch_shape(in, l).repeat_kv);
  const auto none = gpuplan::perf::repeat_kv_passes(*in.memory.model, gpuplan::perf::microbatch_shape(in, l));
  EXPECT_DOUBLE_EQ(none.forward_bytes + none.backward_bytes, 0);
}

TEST(AttentionOutputCopy, OnlyEagerAttentionOutputsAreCopied) {
  // torchtitan's query leaves RoPE contiguous as (batch, sequence, heads, dim); PyTorch's fused attention kernels
  // allocate their output like it and return it transposed, so output.transpose(1, 2).contiguous() finds it
  // contiguous. Eager attention's matmul writes (batch, heads, sequence, dim), which the call copies. Megatron-Core
  // hands Transformer Engine's output on as it is. Hugging Face's query keeps the layout of its projection through
  // apply_rotary_pos_emb (tests/python/test_eager_elementwise.py), so its fused attention output is not copied either.
  gpuplan::EstimateInputs in;
  in.memory.model = gpuplan::model_from_catalog("llama-3.1-8b");
  gpuplan::Layout l;
  l.framework = gpuplan::Framework::torchtitan;
  l.impl = gpuplan::Impl::hf;
  l.attention = gpuplan::Attention::flash;
  EXPECT_FALSE(gpuplan::perf::microbatch_shape(in, l).attention_output_copied);
  l.attention = gpuplan::Attention::eager;
  EXPECT_TRUE(gpuplan::perf::microbatch_shape(in, l).attention_output_copied);
  l.framework = gpuplan::Framework::deepspeed;
  l.attention = gpuplan::Attention::flash;
  EXPECT_FALSE(gpuplan::perf::microbatch_shape(in, l).attention_output_copied);
  l.attention = gpuplan::Attention::eager;
  EXPECT_TRUE(gpuplan::perf::microbatch_shape(in, l).attention_output_copied);
  l.attention = gpuplan::Attention::flash;
  l.framework = gpuplan::Framework::megatron;
  l.impl = gpuplan::Impl::megatron;
  EXPECT_FALSE(gpuplan::perf::microbatch_shape(in, l).attention_output_copied);
}
