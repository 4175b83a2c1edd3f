// nccl-tests' algbw and busbw definitions (doc/PERFORMANCE.md), derived by hand.
#include <gtest/gtest.h>

#include "gpuplan/comm.hpp"
#include "gpuplan/hardware.hpp"

namespace gpuplan {
namespace {

TEST(CollectiveFactors, NcclTestsDefinitions) {
  // AllReduce: 2(n-1)/n. n = 8 -> 14/8.
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::allreduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::allreduce, 2), 1.0);
  // AllGather, ReduceScatter, AlltoAll: (n-1)/n. n = 16 -> 15/16.
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::allgather, 16), 0.9375);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::reducescatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::alltoall, 8), 0.875);
  // Broadcast, SendRecv: 1.
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::sendrecv, 8), 1.0);
}

TEST(CollectiveFactors, CostReportsAlgbwAndBusbwConsistently) {
  const Fabric f = fabric_from_cluster(make_cluster("dgx-h100", 2));
  const double S = 256.0 * 1048576.0;
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reducescatter, Collective::alltoall,
                       Collective::broadcast, Collective::sendrecv}) {
    const auto r = collective_cost(f, c, S, {16, 8, 1});
    EXPECT_NEAR(r.algbw_GBps, S / r.time_s / 1e9, 1e-9 * r.algbw_GBps) << to_string(c);
    EXPECT_NEAR(r.busbw_GBps, r.algbw_GBps * busbw_factor(c, 16), 1e-9 * r.busbw_GBps) << to_string(c);
  }
}

TEST(CollectiveFactors, MeasuredRowObeysTheDefinition) {
  // AR_GPU8_1M_1024M_LUT.csv, last row: 1073741824 bytes in 8193000 ns, busbw printed 229.35.
  const double algbw = 1073741824.0 / 8193000e-9 / 1e9;   // 131.06 GB/s
  EXPECT_NEAR(algbw * busbw_factor(Collective::allreduce, 8), 229.35, 0.01);
}

TEST(CollectiveFactors, RingBusbwIsLinkRateWhateverTheRankCount) {
  // Ring AllReduce: t = (S/B) 2(n-1)/n, so busbw = B for every n (large S, where latency vanishes).
  const Fabric f = fabric_from_cluster(make_cluster("dgx-a100", 1));
  for (int n = 3; n <= 8; ++n) {
    const auto r = collective_cost(f, Collective::allreduce, 64.0 * 1073741824.0, {n, n, 1});
    EXPECT_NEAR(r.busbw_GBps, 240.0, 240.0 * 0.002) << n;
  }
}

TEST(CollectiveFactors, NamesParse) {
  EXPECT_EQ(collective_from_string("all_reduce"), Collective::allreduce);
  EXPECT_EQ(collective_from_string("AllGather"), Collective::allgather);
  EXPECT_EQ(collective_from_string("reduce-scatter"), Collective::reducescatter);
  EXPECT_EQ(collective_from_string("alltoall"), Collective::alltoall);
  EXPECT_FALSE(collective_from_string("gather").has_value());
}

}  // namespace
}  // namespace gpuplan
