// gpuplan on one 8x B200 node against what was measured there: SimuMax's system file
// (tests/data/measured/b200-simumax-system.json, MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json). Each
// expected value is worked out here from the file's raw entries with SimuMax's own formulas, not read from gpuplan.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gpuplan/comm.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "perf/gemm_table.hpp"
#include "perf/layer_comm.hpp"
#include "perf/layer_cost.hpp"

namespace {

using namespace gpuplan;

const nlohmann::json& measured() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/measured/b200-simumax-system.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

// SimuMax's key of a measured flash-attention call of batch 1 (head dim 128, 8 query heads per key/value head).
std::string attention_key(int heads, int keys) {
  return "batch=1, seq_len=" + std::to_string(keys) + ", head_num=" + std::to_string(heads) +
         ", kv_head_num=" + std::to_string(heads / 8) + ", qk_head_dim=128, v_head_dim=128, qkv_contiguous=True";
}

// Llama-3-70B's attention (64 query heads of 128 in 8 groups) priced over 4096 keys on one B200 for `s` must take
// the measured call of `measured_heads` heads at 4096 keys. SimuMax's CoreAttention counts forward 2 x (2 b h d s^2)
// and backward 5 x (2 b h d s^2) FLOPs and measured sdp_fwd / sdp_bwd efficiencies on those FLOPs at the 2250
// TFLOP/s peak; the table keeps four decimals, and one kernel launch (forward) and two (backward) come on top.
void expect_measured_attention(const perf::MicrobatchShape& s, int measured_heads) {
  const nlohmann::json& op = measured().at("accelerator").at("op");
  const PerfConstants pc = perf_constants(HardwareCatalog::builtin().gpu("b200"));
  const perf::Machine mc{2250e12, 8000e9, &pc};
  ModelConfig m;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  const std::string key = attention_key(measured_heads, 4096);
  const double base = 2.0 * measured_heads * 128 * 4096 * 4096;
  const double forward = 2 * base / (2250e12 * op.at("sdp_fwd").at("accurate_efficient_factor").at(key).get<double>());
  const double backward = 5 * base / (2250e12 * op.at("sdp_bwd").at("accurate_efficient_factor").at(key).get<double>());
  const perf::Cost c = perf::attention_core(mc, m, s);
  EXPECT_NEAR(c.forward_s - pc.kernel_overhead_s, forward, 1e-3 * forward) << key;
  EXPECT_NEAR(c.backward_s - 2 * pc.kernel_overhead_s, backward, 1e-3 * backward) << key;
}

// SimuMax's time of one collective inside the node (SystemConfig.compute_net_op_time with 8 GPUs per node):
// size x scale x (n - 1)/n over gbps GiB/s x efficient_factor, plus latency_us x (n - 1) x scale, plus
// fixed_latency_us.
double simumax_collective_s(const char* op, double size, double n) {
  const nlohmann::json& net = measured().at("networks").at("high_intra_node");
  const nlohmann::json& o = net.at("op").at(op);
  const double scale = o.at("scale"), offset = o.at("offset");
  const double bytes = size * scale * (n + offset) / n;
  const double rate = net.at("bandwidth").at("gbps").get<double>() * 1073741824.0 * o.at("efficient_factor").get<double>();
  const double latency_us = o.at("latency_us").get<double>() * (n + offset) * scale + o.at("fixed_latency_us").get<double>();
  return bytes / rate + latency_us * 1e-6;
}

struct Case {
  Collective collective;
  const char* op;
  double ranks;
};

}  // namespace

TEST(B200Measured, CollectivesAsMeasuredOnTheNode) {
  // A Llama-3-70B activation (4096 tokens x 8192 x 2 B) and a 40M-element fp32 gradient bucket, over TP/DP groups
  // of 2, 4 and 8 GPUs: gpuplan's collective plus the framework's per-call cost (collective_call_s) against SimuMax's
  // fit of the measured calls. The fit's per-call part differs by collective (22.2-25.6 us); gpuplan takes their mean.
  const Fabric fabric = fabric_from_cluster(make_cluster("dgx-b200", 1));
  const double call_s = perf_constants(HardwareCatalog::builtin().gpu("b200")).collective_call_s;
  const nlohmann::json& ops = measured().at("networks").at("high_intra_node").at("op");
  for (const double size : {4096.0 * 8192 * 2, 40e6 * 4}) {
    for (const Case c : {Case{Collective::allgather, "all_gather", 8}, Case{Collective::reducescatter, "reduce_scatter", 2},
                         Case{Collective::allreduce, "all_reduce", 4}, Case{Collective::reducescatter, "reduce_scatter", 8}}) {
      const auto n = static_cast<std::int64_t>(c.ranks);
      const double ours = collective_time_s(fabric, c.collective, size, {n, n, 8 / n}) + call_s;
      const double theirs = simumax_collective_s(c.op, size, c.ranks);
      // 1 %, plus what one per-call figure for all collectives leaves of this one's own.
      const double own_call_s = ops.at(c.op).at("fixed_latency_us").get<double>() * 1e-6;
      EXPECT_NEAR(ours, theirs, 0.01 * theirs + std::abs(own_call_s - call_s)) << c.op << " over " << n << " GPUs, "
                                                                               << size << " B";
    }
  }
  // All-to-all: bandwidth and step latency as measured (its per-call part depends on the group size in the fit and
  // is left out of both sides here).
  const double size = 4096.0 * 6 * 5120 * 2;   // DeepSeek-V2's routed tokens, top-6
  const nlohmann::json& a2a = measured().at("networks").at("high_intra_node").at("op").at("all2all");
  const double theirs = simumax_collective_s("all2all", size, 8) - a2a.at("fixed_latency_us").get<double>() * 1e-6;
  EXPECT_NEAR(collective_time_s(fabric, Collective::alltoall, size, {8, 8, 1}), theirs, 0.01 * theirs);
  // Across nodes nothing measured inside one applies: the model stays NCCL's.
  const Fabric two = fabric_from_cluster(make_cluster("dgx-b200", 2));
  EXPECT_EQ(collective_cost(two, Collective::allgather, size, {16, 8, 1}).algorithm.find("measured"), std::string::npos);
  EXPECT_NE(collective_cost(fabric, Collective::allgather, size, {8, 8, 1}).algorithm.find("measured"), std::string::npos);
}

TEST(B200Measured, PerCallCostAndPermuteRateFromTheFile) {
  const PerfConstants b200 = perf_constants(HardwareCatalog::builtin().gpu("b200"));
  const nlohmann::json& op = measured().at("networks").at("high_intra_node").at("op");
  const double mean_fixed_us = (op.at("all_reduce").at("fixed_latency_us").get<double>() +
                                op.at("all_gather").at("fixed_latency_us").get<double>() +
                                op.at("reduce_scatter").at("fixed_latency_us").get<double>()) / 3;
  EXPECT_NEAR(b200.collective_call_s, mean_fixed_us * 1e-6, 0.01e-6);
  // Permute: SimuMax timed moe_permute_with_probs + moe_unpermute forward, then their backward, at 4096 tokens on
  // DeepSeek-V2 (5120 hidden, top-6 of 160 experts) and DeepSeek-V3 (7168, top-8 of 256), capacity factor 1
  // (simu_tools/efficency_test/test_ce_permute_efficiency.py). It stored each direction as an efficiency of gbps
  // GiB/s over its bytes, (tokens + 3 x capacity x experts) x hidden x 2 B per kernel, two kernels, after taking
  // latency_us off each of 4 launches per shape. Undo that to get the measured milliseconds.
  const nlohmann::json& bw = measured().at("accelerator").at("bandwidth");
  struct Shape {
    double hidden, experts, topk;
  };
  const Shape shapes[] = {{5120, 160, 6}, {7168, 256, 8}};
  const perf::Machine mc{2250e12, 8000e9, &b200};
  for (const char* direction : {"permute_fwd", "permute_bwd"}) {
    const nlohmann::json& d = bw.at(direction);
    const double rate = d.at("gbps").get<double>() * 1073741824.0 * d.at("efficient_factor").get<double>();
    double measured_s = 0, model_s = 0;
    for (const Shape& shape : shapes) {
      const double capacity = std::ceil(4096 * shape.topk / shape.experts);
      const double simumax_bytes = 2 * (4096 + 3 * capacity * shape.experts) * shape.hidden * 2;
      measured_s += simumax_bytes / rate + 4 * d.at("latency_us").get<double>() * 1e-6;
      const perf::Cost c = perf::permutes(mc, 4096 * shape.topk * shape.hidden * 2);
      model_s += std::string(direction) == "permute_fwd" ? c.forward_s : c.backward_s;
    }
    // One rate for both directions: each within 2 % of its measurement.
    EXPECT_NEAR(model_s, measured_s, 0.02 * measured_s) << direction;
  }
  // Cross-entropy: the same script timed Megatron-LM's vocab_parallel_cross_entropy ("ce") and Transformer Engine's
  // parallel_cross_entropy ("ce_fusion"), forward and backward, on bf16 logits of 4096 tokens by these
  // vocabularies, and stored each as an efficiency over its bytes after taking latency_us off each of 2 launches
  // per case. Its bytes per case, L logits: unfused 38 L + 8 x 4096 + 8 forward, 14 L + 4 backward; TE 8 L + 8 x 4096.
  const double vocabularies[] = {102400, 129280, 128256, 64128, 32128, 16128, 128512};
  for (const char* kind : {"ce", "ce_fusion"}) {
    const nlohmann::json& d = bw.at(kind);
    const double rate = d.at("gbps").get<double>() * 1073741824.0 * d.at("efficient_factor").get<double>();
    const bool te = std::string(kind) == "ce_fusion";
    double measured_s = 0, model_s = 0;
    for (const double vocabulary : vocabularies) {
      const double logits = 4096 * vocabulary;
      const double bytes = te ? 8 * logits + 8 * 4096 : 52 * logits + 8 * 4096 + 12;
      measured_s += bytes / rate + 2 * d.at("latency_us").get<double>() * 1e-6;
      const perf::Cost c = perf::cross_entropy(mc, logits, 2, te ? Loss::fused_te : Loss::unfused);
      model_s += c.forward_s + c.backward_s;
    }
    EXPECT_NEAR(model_s, measured_s, 0.01 * measured_s) << kind;
  }
  // Other GPUs keep the model's defaults; the per-call cost, the software stack's rather than the GPU's, is the B200
  // measurement until one is made on them.
  const PerfConstants h100 = perf_constants(HardwareCatalog::builtin().gpu("h100-sxm-80gb"));
  EXPECT_EQ(h100.collective_call_s, b200.collective_call_s);
  EXPECT_EQ(h100.permute_efficiency, 0.0);
  EXPECT_EQ(h100.cross_entropy_efficiency, 0.0);
  EXPECT_EQ(h100.te_cross_entropy_efficiency, 0.0);
}

TEST(B200Measured, FlashAttentionAtTheMeasuredEfficiency) {
  // Llama-3-70B at TP 1 and TP 8 (64 and 8 heads per rank) over 4096 tokens: the measured calls themselves.
  for (const double tp : {1.0, 8.0}) {
    perf::MicrobatchShape s;
    s.tp = tp;
    s.micro_batch = 1;
    s.tokens = s.local_sequence = s.keys_per_query = s.attention_keys_per_call = 4096;
    expect_measured_attention(s, static_cast<int>(64 / tp));
  }
}

TEST(B200Measured, AttentionBatchRunsAsMoreHeads) {
  // The flash-attention kernel runs one thread block per sequence, head and tile of queries: a micro-batch of 2
  // with 32 heads per rank (Llama-3-70B's 64 heads at TP 2) launches the blocks of one sequence with 64 heads and
  // loops over as many keys, so it runs at SimuMax's measurement of batch 1 with 64 heads, not at that of 32.
  perf::MicrobatchShape s;
  s.tp = 2;
  s.micro_batch = 2;
  s.local_sequence = s.keys_per_query = s.attention_keys_per_call = 4096;
  s.tokens = 2 * 4096;
  expect_measured_attention(s, 64);
}

TEST(B200Measured, AttentionBetweenMeasuredCallsWeighsItsOwnHeadDimension) {
  // A head-dim-128 call of 64 batch x heads over 8192 keys (Llama-3-8B, micro-batch 2) was not measured. Placed by
  // its thread blocks (64 x 8192 = 2^19) and its keys (2^13), its four nearest head-dim-128 measurements in log2
  // space are 128 heads x 4096 keys (blocks 2^19, keys 2^12: squared distance 1), 64 x 4096 (2^18, 2^12: 2),
  // 16 x 32768 (2^19, 2^15: 4) and 8 x 32768 (2^18, 2^15: 5), weighed by inverse squared distance. The head-dim-192
  // (MLA) kernels are other kernels and take no part.
  const nlohmann::json& op = measured().at("accelerator").at("op");
  auto efficiency = [&](const char* pass, int heads, int keys) {
    return op.at(pass).at("accurate_efficient_factor").at(attention_key(heads, keys)).get<double>();
  };
  auto weighed = [&](const char* pass) {
    return (efficiency(pass, 128, 4096) / 1 + efficiency(pass, 64, 4096) / 2 + efficiency(pass, 16, 32768) / 4 +
            efficiency(pass, 8, 32768) / 5) /
           (1.0 + 1.0 / 2 + 1.0 / 4 + 1.0 / 5);
  };
  const auto table = perf::builtin_gemm_table("b200");
  ASSERT_NE(table, nullptr);
  const perf::AttentionEfficiencies e = perf::lookup_attention(*table, 64, 8192, 128);
  // The table keeps four decimals of the source's values.
  EXPECT_NEAR(e.forward, weighed("sdp_fwd"), 1e-4);
  EXPECT_NEAR(e.backward, weighed("sdp_bwd"), 1e-4);
}

TEST(B200Measured, SequenceParallelBackwardGathersTheInputAgain) {
  // By hand from Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication (tensor_parallel/layers.py): a layer
  // has two column-parallel linears (qkv, fc1) and two row-parallel ones (out, fc2). Forward: an all-gather before
  // each column-parallel GEMM, a reduce-scatter after each row-parallel one: 2 AG + 2 RS. Backward: each row-parallel
  // linear all-gathers its output gradient (2 AG, waited for); each column-parallel one all-gathers its saved
  // sequence-sharded input again for the weight gradient and reduce-scatters its input gradient, both asynchronous
  // beside its GEMMs (2 AG + 2 RS). Priced 1 per all-gather and 1000 per reduce-scatter, the sums count them.
  ModelConfig m;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  Layout l;
  l.tp = 8;
  perf::MicrobatchShape s;
  s.tp = 8;
  s.tokens = 4096;
  s.hidden = 8192;
  s.sequence_parallel = true;
  RankPlacement placement;
  placement.tp = {8, 8, 1};
  auto count = [](Collective c, double, const GroupPlacement&) {
    return c == Collective::allgather ? 1.0 : c == Collective::reducescatter ? 1000.0 : 1e6;
  };
  const perf::LayerComm comm = perf::layer_comm(m, l, s, placement, count);
  EXPECT_EQ(comm.tp_forward_s, 2 + 2000);
  EXPECT_EQ(comm.tp_backward_s, 2);
  EXPECT_EQ(comm.tp_backward_async_s, 2 + 2000);
  // Without sequence parallelism: one all-reduce per row-parallel output forward, per column-parallel input
  // gradient backward.
  s.sequence_parallel = false;
  const perf::LayerComm plain = perf::layer_comm(m, l, s, placement, count);
  EXPECT_EQ(plain.tp_forward_s, 2e6);
  EXPECT_EQ(plain.tp_backward_s + plain.tp_backward_async_s, 2e6);
}
