// Context parallelism is never free: Transformer Engine's ring attention sends the key/value gradients one hop more
// after its last step, and no compute is left to hide that hop.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/cp_bookkeeping.hpp"
#include "perf/layer_comm.hpp"
#include "test_support.hpp"

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

// Transformer Engine's bookkeeping around context-parallel attention (perf/cp_bookkeeping.hpp): the copies and
// merges of transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, counted here kernel by
// kernel for Llama-3.1-8B's attention (32 query heads, 8 key/value heads of 128) on 4096 local tokens in bf16.
namespace cp_bookkeeping_test {

gpuplan::ModelConfig llama8b_attention(std::int64_t kv_heads) { return gpuplan::test::attention_of(32, kv_heads); }

gpuplan::perf::MicrobatchShape local_tokens() {
  gpuplan::perf::MicrobatchShape s = gpuplan::test::bf16_tokens();
  s.keys_per_query = 8192;
  s.attention_keys_per_call = 2048;
  return s;
}

// The bookkeeping of `kv_heads` groups over `ranks` ranks of the exchange `field` names.
gpuplan::perf::ElementwisePasses priced(std::int64_t kv_heads, double gpuplan::perf::MicrobatchShape::*field,
                                        double ranks, bool torch_sdpa = false) {
  gpuplan::perf::MicrobatchShape s = local_tokens();
  s.*field = ranks;
  s.torch_sdpa = torch_sdpa;
  return gpuplan::perf::cp_bookkeeping(llama8b_attention(kv_heads), s);
}

constexpr double kQ = 4096.0 * 32 * 128 * 2;       // the local queries, and as much the output and its gradient
constexpr double kKV = 2 * 4096.0 * 8 * 128 * 2;   // the local keys and values together

}  // namespace cp_bookkeeping_test

TEST(ContextParallelBookkeeping, TheRingOfTwoMergesItsPartialResults) {
  using namespace cp_bookkeeping_test;
  const auto t = priced(8, &gpuplan::perf::MicrobatchShape::cp_ring_ranks, 2);
  // Forward on rank 1, which attends with its whole query at both steps: torch.cat of K and V into the send
  // buffer (read + write), the first step's output rescaled (read + write), the second's rescaled and added (read
  // both, write one); kernels: the cat, two output merges, the last softmax-statistics merge.
  EXPECT_DOUBLE_EQ(t.forward_bytes, (kKV + kKV) + (kQ + kQ) + (kQ + kQ + kQ));
  EXPECT_DOUBLE_EQ(t.forward_kernels, 4);
  // Backward on rank 1: K and V copied into the ring buffer; dq of step 0 copied whole, of step 1 added whole;
  // dK and dV of step 0 copied for the first half of the keys, of step 1 added whole. Rank 0 moves less: 3.5 Q
  // and 4.5 KV. Kernels: the copy, two dq merges, two for dK and two for dV.
  const double rank1 = (kQ + kQ) + 3 * kQ + (kKV / 2 + kKV / 2) + 3 * kKV;
  EXPECT_DOUBLE_EQ(t.backward_bytes, (kKV + kKV) + rank1);
  EXPECT_DOUBLE_EQ(t.backward_kernels, 7);
}

TEST(ContextParallelBookkeeping, TheBusiestRankOfALongRingPacesIt) {
  // Multi-head attention (K + V twice the size of Q) over a ring of 8: rank 0 merges its whole K/V gradients at
  // every step but the last (copy, 6 adds, then half added and half copied) and the second half of its query
  // gradients (half copied, 6 half adds, then half copied and half added); rank 7 the reverse. Rank 0 moves more.
  using namespace cp_bookkeeping_test;
  const auto t = priced(32, &gpuplan::perf::MicrobatchShape::cp_ring_ranks, 8);
  const double kv = 2 * kQ;
  const double rank0 = (kQ + 6 * 1.5 * kQ + (kQ + 1.5 * kQ)) + (2 * kv + 6 * 3 * kv + (1.5 * kv + kv));
  const double rank7 = (2 * kQ + 7 * 3 * kQ) + (kv + 6 * 1.5 * kv + 3 * kv);
  ASSERT_GT(rank0, rank7);
  EXPECT_DOUBLE_EQ(t.backward_bytes, 2 * kv + rank0);
  // Forward, rank 7: eight whole outputs merged.
  EXPECT_DOUBLE_EQ(t.forward_bytes, 2 * kv + 2 * kQ + 7 * 3 * kQ);
}

TEST(ContextParallelBookkeeping, AllToAllsCopyTwiceAroundEachExchange) {
  // flash_attn_a2a_communicate: movedim(...).contiguous() on one side of each all-to-all, index_select of the
  // sequence chunks on the other, for Q, K, V and the output forward and their gradients backward.
  using namespace cp_bookkeeping_test;
  const auto t = priced(8, &gpuplan::perf::MicrobatchShape::cp_a2a_ranks, 8);
  const double tensors = kQ + kKV + kQ;
  EXPECT_DOUBLE_EQ(t.forward_bytes, 2 * 2 * tensors);
  EXPECT_DOUBLE_EQ(t.backward_bytes, 2 * 2 * tensors);
  EXPECT_DOUBLE_EQ(t.forward_kernels, 8);
}

TEST(ContextParallelBookkeeping, TheAllGatherReordersAndAccumulatesTheWholeSequence) {
  // AttnFuncWithCPAndKVAllGather over 4 ranks: forward index_select of the gathered K and V (4 x KV read and
  // written) and the two output chunks copied into place; backward the whole-sequence dK and dV zeroed, the
  // gather reordered again, the two dq chunks copied, dK/dV added over 9/8 of the sequence (chunk ranks + 1 and
  // 2 x 4 - rank of the 8 chunks) and reordered for the reduce-scatter.
  using namespace cp_bookkeeping_test;
  const auto t = priced(8, &gpuplan::perf::MicrobatchShape::cp_gather_ranks, 4);
  const double whole = 4 * kKV;
  EXPECT_DOUBLE_EQ(t.forward_bytes, 2 * whole + 2 * kQ);
  EXPECT_DOUBLE_EQ(t.backward_bytes, whole + 2 * whole + 2 * kQ + 3 * whole * 9 / 8 + 2 * whole);
}

TEST(ContextParallelBookkeeping, NothingWithoutContextParallelism) {
  using namespace cp_bookkeeping_test;
  EXPECT_DOUBLE_EQ(gpuplan::perf::cp_bookkeeping(llama8b_attention(8), local_tokens()).backward_bytes, 0);
}

TEST(ContextParallelBookkeeping, PyTorchsRingMergesInFp32) {
  // torchtitan's context parallelism runs PyTorch's ring attention (torch/distributed/tensor/experimental/
  // _attention.py) with fp32 merging, eager op by op. Over 2 ranks, in elements of Q (and the output) and of K + V:
  using namespace cp_bookkeeping_test;
  const double q = kQ / 2, kv = kKV / 2;
  const auto t = priced(8, &gpuplan::perf::MicrobatchShape::cp_ring_ranks, 2, true);
  // Forward, rank 1: key/value .contiguous() (2 + 2 B), one torch.cat to send them (2 + 2 B), both steps' outputs
  // cast to fp32 (2 + 4 B each), one merge out - sigmoid(..) * (out - out_1): a subtraction (4 + 4 + 4 B), a product
  // (4 + 4 B) and a subtraction (4 + 4 + 4 B), and the cast back (4 + 2 B).
  EXPECT_DOUBLE_EQ(t.forward_bytes, 4 * kv + 4 * kv + 2 * 6 * q + (12 + 8 + 12) * q + 6 * q);
  // Backward: fp32 dq, dk, dv zeroed (4 B), key/value .contiguous() and one send cat (4 + 4 B), dk/dv packed in fp32
  // at both steps (8 B each), the results cast back (4 + 2 B). Rank 0 then adds dq whole at step 0 (4 + 2 + 4 B) and
  // its second half at step 1 followed by the torch.cat of _partial_update (5 + 8 B), and dk/dv whole twice (10 B
  // each): 23 q + 20 kv, more than rank 1's 20 q + 23 kv since Q is twice K + V here.
  const double common = 4 * (q + kv) + 4 * kv + 4 * kv + 2 * 8 * kv + 6 * (q + kv);
  EXPECT_DOUBLE_EQ(t.backward_bytes, common + (10 + 13) * q + 2 * 10 * kv);
}

TEST(ContextParallelBookkeeping, TheAttentionCorePaysItAtTheMemoryBoundRate) {
  using namespace cp_bookkeeping_test;
  const gpuplan::GpuSpec& h100 = gpuplan::HardwareCatalog::builtin().gpu("h100-sxm-80gb");
  const gpuplan::PerfConstants pc = gpuplan::perf_constants(h100);
  const gpuplan::perf::Machine mc{989.4e12, 3350e9, &pc, 989.4e12};
  const gpuplan::ModelConfig m = llama8b_attention(8);
  gpuplan::perf::MicrobatchShape ring = local_tokens();
  ring.cp_ring_ranks = 2;
  ring.attention_calls = 2;
  gpuplan::perf::MicrobatchShape kernels_only = ring;
  kernels_only.cp_ring_ranks = 1;
  const gpuplan::perf::Cost with = gpuplan::perf::attention_core(mc, m, ring);
  const gpuplan::perf::Cost without = gpuplan::perf::attention_core(mc, m, kernels_only);
  const double rate = 3350e9 * pc.memory_bound_efficiency;
  EXPECT_NEAR(with.forward_s - without.forward_s, (2 * kKV + 5 * kQ) / rate + 4 * pc.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(with.backward_s - without.backward_s, (5 * kQ + 6 * kKV) / rate + 7 * pc.kernel_overhead_s, 1e-12);
}

TEST(ContextParallelBookkeeping, TheLayoutSetsWhichExchangeRuns) {
  gpuplan::EstimateInputs in;
  in.memory.model = gpuplan::model_from_catalog("llama-3.1-8b");
  in.memory.training.seq_len = 65536;
  in.gpu = gpuplan::HardwareCatalog::builtin().gpu("h100-sxm-80gb");
  gpuplan::Layout l;
  l.cp = 8;
  l.cp_comm = gpuplan::CpComm::a2a_p2p;
  l.cp_a2a = 2;
  const gpuplan::perf::MicrobatchShape two_level = gpuplan::perf::microbatch_shape(in, l);
  EXPECT_DOUBLE_EQ(two_level.cp_ring_ranks, 4);
  EXPECT_DOUBLE_EQ(two_level.cp_a2a_ranks, 2);
  l.cp_comm = gpuplan::CpComm::all_gather;
  EXPECT_DOUBLE_EQ(gpuplan::perf::microbatch_shape(in, l).cp_gather_ranks, 8);
  EXPECT_DOUBLE_EQ(gpuplan::perf::microbatch_shape(in, l).cp_ring_ranks, 1);
}
