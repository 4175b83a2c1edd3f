// The caching-allocator replay of a Megatron-Core + TE stage against the per-rank max_memory_reserved of a real run:
// Llama-3-70B cut to 12 layers, tp 1, pp 2, dp 4, 4 microbatches of 4,096 tokens, on 8x B200
// (validation/data/b200-megatron-llama3-70b.json, llama3_70b_l12_tp1_pp2_dp4_mbc4_cef, from MooreThreads/SimuMax).
// The four data-parallel ranks of stage 0 hold the same activations but different optimizer shards; measured,
// reserved minus allocated is 2,581 / 3,445 / 4,440 / 2,750 MiB: rank 2 by far the most.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "memory/megatron_replay.hpp"

namespace gpuplan::memory {
namespace {

constexpr double kMebibyte = 1 << 20;

ReplayShape llama70b_l12_pp2_stage0() {
  ReplayShape r;
  r.hidden = 8192;
  r.ffn = 28672;
  r.heads = 64;
  r.kv_heads = 8;
  r.head_dim = 128;
  r.vocab = 128256;   // already a multiple of 128
  r.tokens = 4096;
  r.pp = 2;
  r.stage = 0;
  r.layers = 6;
  r.shard_ranks = 4;
  r.microbatches = 4;
  r.logits_bytes = 0;
  return r;
}

TEST(MegatronReplay, TheRankWithTheWorstShardReservesTheMost) {
  const ReplayShape shape = llama70b_l12_pp2_stage0();
  std::vector<double> gaps;
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    const ReplayPeaks p = replay_megatron_stage(shape, rank);
    gaps.push_back((p.reserved - p.allocated) / kMebibyte);
  }
  EXPECT_EQ(std::max_element(gaps.begin(), gaps.end()) - gaps.begin(), 2);
  EXPECT_NEAR(replayed_fragmentation(shape) / kMebibyte, 4440, 0.05 * 4440);
}

TEST(MegatronReplay, TheLastStageWithOneMicrobatchInFlightReservesLess) {
  // Measured on the same run: stage 1 (the output layer, one microbatch in flight) at most 1,283 MiB.
  ReplayShape shape = llama70b_l12_pp2_stage0();
  shape.stage = 1;
  shape.logits_bytes = 4096.0 * 128256 * 2;   // TE's fused cross-entropy keeps the 16-bit logits
  EXPECT_NEAR(replayed_fragmentation(shape) / kMebibyte, 1283, 0.10 * 1283);
}

}  // namespace
}  // namespace gpuplan::memory
