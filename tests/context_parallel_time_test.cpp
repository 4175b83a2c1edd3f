// Context parallelism is never free: Transformer Engine's ring attention sends the key/value gradients one hop more
// after its last step, and no compute is left to hide that hop.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

namespace api = gpuplan::api;

namespace {

double seconds_of(const api::EstimateResult& r, const std::string& term) {
  for (const auto& [name, seconds] : r.time.breakdown)
    if (name == term) return seconds;
  return -1;
}

api::EstimateRequest llama8b_cp(std::int64_t nodes, std::int64_t cp, std::int64_t seq_len) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = nodes;
  r.layout.cp = cp;
  r.layout.zero = 1;
  r.layout.recompute = "full";
  r.training.seq_len = seq_len;
  r.training.global_batch = 8 * nodes / cp;   // one microbatch per data-parallel rank
  return r;
}

}  // namespace

TEST(ContextParallelTime, TheLastGradientHopIsNeverHidden) {
  for (std::int64_t cp : {2, 4, 8}) {
    for (std::int64_t seq_len : {8192, 131072}) {
      const api::EstimateResult r = api::run(llama8b_cp(1, cp, seq_len));
      // Per layer the last hop carries the key/value gradients of the local sequence: (seq / cp) tokens x 2 x 8
      // heads x 128 x 2 bytes. No NVLink 4 port moves them faster than 450 GB/s one way (the H100 datasheet's 900
      // GB/s counts both directions), and Llama-3.1-8B has 32 layers.
      const double hop_bytes = static_cast<double>(seq_len / cp) * 2 * 8 * 128 * 2;
      EXPECT_GE(seconds_of(r, "cp_comm"), 32 * hop_bytes / 450e9) << "cp " << cp << ", sequence " << seq_len;
    }
  }
}

TEST(ContextParallelTime, ARingAcrossNodesIsPacedByItsSlowestHop) {
  // The same per-rank shapes on a ring of 8 inside a node and of 16 over two nodes (sequence doubled): each step of
  // the second waits for the hop over InfiniBand.
  const double inside = seconds_of(api::run(llama8b_cp(1, 8, 65536)), "cp_comm");
  const double across = seconds_of(api::run(llama8b_cp(2, 16, 131072)), "cp_comm");
  EXPECT_GT(across, 2 * inside);
}

namespace {

api::EstimateRequest llama8b_cp_type(std::int64_t cp, const char* type, std::int64_t seq_len) {
  api::EstimateRequest r = llama8b_cp(1, cp, seq_len);
  r.layout.cp_comm_type = type;
  return r;
}

}  // namespace

TEST(ContextParallelTime, EveryExchangeWaitsAtLeastForItsBytesOnTheWire) {
  // Llama-3.1-8B per rank and layer, sequence s over cp ranks: Q and the output are s/cp x 4096 x 2 bytes, K and V
  // s/cp x 1024 x 2 bytes each. What one rank must send per layer, forward and backward, through NVLink 4 at most
  // 450 GB/s one way:
  //   a2a: Q, K, V and the output forward, the output's gradient and Q, K, V's backward, (cp - 1)/cp of each;
  //   all_gather: K and V of the other ranks forward and again backward, and their gradients reduce-scattered.
  const std::int64_t cp = 8, seq = 65536;
  const double tokens = static_cast<double>(seq / cp);
  const double q = tokens * 4096 * 2, kv = tokens * 1024 * 2;
  const double a2a_bytes = 2 * (q + 2 * kv + q) * (cp - 1) / cp;
  const double gather_bytes = 3 * 2 * kv * (cp - 1);
  EXPECT_GE(seconds_of(api::run(llama8b_cp_type(cp, "a2a", seq)), "cp_comm"), 32 * a2a_bytes / 450e9);
  EXPECT_GE(seconds_of(api::run(llama8b_cp_type(cp, "all_gather", seq)), "cp_comm"), 32 * gather_bytes / 450e9);
}

TEST(ContextParallelTime, NoExchangeIsFree) {
  for (const char* type : {"p2p", "a2a", "all_gather"})
    EXPECT_GT(seconds_of(api::run(llama8b_cp_type(8, type, 32768)), "cp_comm"), 0) << type;
  api::EstimateRequest two_level = llama8b_cp(2, 16, 65536);   // 16 ranks over two nodes
  two_level.layout.cp_comm_type = "a2a+p2p";
  two_level.layout.cp_a2a_size = 8;
  EXPECT_GT(seconds_of(api::run(two_level), "cp_comm"), 0);
}

TEST(ContextParallelTime, AllToAllNeedsHeadsThatDivide) {
  // Llama-3.1-8B has 8 key/value heads: an all-to-all over 16 ranks cannot split them (Transformer Engine asserts
  // k.shape[-2] % cp == 0), the all-gather can run.
  api::EstimateRequest r = llama8b_cp(2, 16, 65536);
  r.layout.cp_comm_type = "a2a";
  try {
    api::run(r);
    FAIL() << "a2a over 16 ranks with 8 key/value heads was accepted";
  } catch (const gpuplan::InputError& e) {
    EXPECT_EQ(e.field(), "layout.cp_comm_type");
  }
  r.layout.cp_comm_type = "all_gather";
  EXPECT_GT(seconds_of(api::run(r), "cp_comm"), 0);
}

TEST(ContextParallelTime, TwoLevelExchangeNeedsItsGroupSize) {
  api::EstimateRequest r = llama8b_cp(2, 16, 65536);
  r.layout.cp_comm_type = "a2a+p2p";
  try {
    api::run(r);
    FAIL() << "a2a+p2p without --cp-a2a-size was accepted";
  } catch (const gpuplan::InputError& e) {
    EXPECT_EQ(e.field(), "layout.cp_a2a_size");
  }
}
