// The caching-allocator replay against PyTorch's rules (c10/cuda/CUDACachingAllocator.cpp), each case derived by hand
// from them: 512 B rounding, the 2 MiB small-pool segments, 20 MiB segments below 10 MiB, 2 MiB rounding above, best
// fit, splitting only remainders over 1 MiB in the large pool, and merging freed neighbours.
#include <gtest/gtest.h>

#include "memory/caching_allocator.hpp"

namespace gpuplan::memory {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

TEST(CachingAllocator, SmallRequestsShareATwoMebibyteSegment) {
  CachingAllocator a;
  a.allocate(1000);                       // rounded to 1024 B
  EXPECT_EQ(a.allocated(), 1024u);
  EXPECT_EQ(a.reserved(), 2 * kMiB);
  a.allocate(1000);                       // split off the same segment's remainder
  EXPECT_EQ(a.reserved(), 2 * kMiB);
  EXPECT_EQ(a.allocated(), 2048u);
}

TEST(CachingAllocator, MidSizedRequestsGetTwentyMebibyteSegments) {
  CachingAllocator a;
  a.allocate(5 * kMiB);
  EXPECT_EQ(a.reserved(), 20 * kMiB);
  a.allocate(5 * kMiB);                   // from the 15 MiB left in that segment
  a.allocate(5 * kMiB);
  EXPECT_EQ(a.reserved(), 20 * kMiB);
  a.allocate(5 * kMiB + 1);               // 5 MiB + 512 B does not fit the last 5 MiB: a new segment
  EXPECT_EQ(a.reserved(), 40 * kMiB);
}

TEST(CachingAllocator, LargeRequestsRoundToTwoMebibytesAndKeepSmallRemainders) {
  CachingAllocator a;
  a.allocate(11 * kMiB);                  // a 12 MiB segment; the 1 MiB left is not more than 1 MiB: not split
  EXPECT_EQ(a.reserved(), 12 * kMiB);
  EXPECT_EQ(a.allocated(), 12 * kMiB);
  a.allocate(kMiB + 512);                 // so this one needs a segment of its own (20 MiB)
  EXPECT_EQ(a.reserved(), 32 * kMiB);
}

TEST(CachingAllocator, BestFitTakesTheSmallestFreeBlockThatFits) {
  CachingAllocator a;
  const auto big = a.allocate(50 * kMiB), mid = a.allocate(30 * kMiB);
  a.release(big);
  a.release(mid);
  const auto taken = a.allocate(25 * kMiB);   // the 30 MiB block, split: 5 MiB stays free
  EXPECT_EQ(a.reserved(), 80 * kMiB);
  a.allocate(45 * kMiB);                      // still fits the 50 MiB block
  EXPECT_EQ(a.reserved(), 80 * kMiB);
  a.release(taken);
  EXPECT_EQ(a.allocated(), 45 * kMiB);
}

TEST(CachingAllocator, FreedNeighboursMergeBackIntoTheirSegment) {
  CachingAllocator a;
  a.release(a.allocate(40 * kMiB));
  const auto first = a.allocate(20 * kMiB), second = a.allocate(20 * kMiB);   // both from the 40 MiB segment
  EXPECT_EQ(a.reserved(), 40 * kMiB);
  a.release(first);
  a.release(second);
  a.allocate(40 * kMiB);                      // whole again
  EXPECT_EQ(a.reserved(), 40 * kMiB);
  EXPECT_EQ(a.peak_allocated(), 40 * kMiB);
}

TEST(CachingAllocator, AStateCachedIntoAnActivationBlockForcesANewSegment) {
  // The mechanism behind most of Megatron's reserve: a 42 MiB tensor created while a 64 MiB activation block is
  // cached takes it (22 MiB split off), so the next 64 MiB activation needs a segment of its own.
  CachingAllocator a;
  a.release(a.allocate(64 * kMiB));
  a.allocate(42 * kMiB);
  a.allocate(64 * kMiB);
  EXPECT_EQ(a.reserved(), 128 * kMiB);
  EXPECT_EQ(a.allocated(), 106 * kMiB);
  EXPECT_EQ(a.peak_reserved(), 128 * kMiB);
}

}  // namespace
}  // namespace gpuplan::memory
