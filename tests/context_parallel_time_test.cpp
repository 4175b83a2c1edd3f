// Context parallelism is never free: Transformer Engine's ring attention sends the key/value gradients one hop more
// after its last step, and no compute is left to hide that hop.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"

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
