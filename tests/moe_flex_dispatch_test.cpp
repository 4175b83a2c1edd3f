// Megatron-Core's flex token dispatcher (--moe-token-dispatcher-type flex: DeepEP or HybridEP). DeepEP's normal
// kernels send a token once to each node its experts are on and forward it over NVLink there (deepseek-ai/DeepEP
// README, "asymmetric-domain bandwidth forwarding"); the alltoall dispatcher sends one copy per routed expert.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "framework/launch.hpp"
#include "gpuplan/api.hpp"
#include "perf/layer_comm.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace moe_flex_dispatch_test {

// Every way of choosing top_k distinct experts of `experts` laid out in `nodes` equal blocks, counted: the mean
// number of nodes other than node 0 that a choice touches.
double enumerated_remote_nodes(int experts, int top_k, int nodes) {
  std::vector<int> pick(top_k);
  for (int i = 0; i < top_k; ++i) pick[i] = i;
  double touched = 0, choices = 0;
  for (;;) {
    std::set<int> remote;
    for (int expert : pick)
      if (expert / (experts / nodes) != 0) remote.insert(expert / (experts / nodes));
    touched += static_cast<double>(remote.size());
    choices += 1;
    int i = top_k - 1;
    while (i >= 0 && pick[i] == experts - top_k + i) --i;
    if (i < 0) break;
    ++pick[i];
    for (int j = i + 1; j < top_k; ++j) pick[j] = pick[j - 1] + 1;
  }
  return touched / choices;
}

TEST(MoeFlexDispatch, RemoteNodesPerTokenAsCounted) {
  for (const auto& [experts, top_k, nodes] : std::vector<std::tuple<int, int, int>>{
           {8, 2, 2}, {8, 2, 4}, {12, 3, 3}, {16, 4, 4}, {16, 6, 2}, {16, 1, 8}}) {
    EXPECT_NEAR(perf::expected_remote_nodes(experts, top_k, nodes), enumerated_remote_nodes(experts, top_k, nodes),
                1e-12)
        << experts << " experts, top " << top_k << ", " << nodes << " nodes";
  }
  EXPECT_EQ(perf::expected_remote_nodes(128, 8, 1), 0);
}

// Qwen3-30B-A3B (128 experts, top 8) at micro-batch 1 of 4096 tokens, bf16, on DGX H100 nodes.
api::EstimateRequest qwen3(std::int64_t nodes, const std::string& dispatcher) {
  api::EstimateRequest r;
  r.model.name_or_path = "qwen3-30b-a3b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = nodes;
  r.training.seq_len = 4096;
  r.training.global_batch = 8 * nodes;
  r.training.moe_dispatcher = dispatcher;
  r.layout.ep = 8 * nodes;
  r.layout.zero = 1;
  return r;
}

TEST(MoeFlexDispatch, WithinOneNodeItIsTheAllToAll) {
  EXPECT_DOUBLE_EQ(test::time_term(api::run(qwen3(1, "flex")), "ep_comm"),
                   test::time_term(api::run(qwen3(1, "alltoall")), "ep_comm"));
}

TEST(MoeFlexDispatch, AcrossNodesEachTokenCrossesOncePerNode) {
  // EP 32 over 4 nodes: the all-to-all sends 8 x 24/32 = 6 of a token's 8 copies off the node, DeepEP one per other
  // node its experts are on: 3 (1 - C(96, 8) / C(128, 8)). Both are bound by the NIC (NVLink carries 7/8 of the
  // copies about ten times faster). What twice the tokens add to ep_comm is bandwidth alone (each call's fixed
  // latency cancels), so it scales by the ratio of the bytes that cross.
  double none_on_a_node = 1;
  for (int i = 0; i < 8; ++i) none_on_a_node *= (96.0 - i) / (128.0 - i);
  const double crossing_ratio = 3 * (1 - none_on_a_node) / 6;
  auto added_by_doubling = [](const std::string& dispatcher) {
    api::EstimateRequest longer = qwen3(4, dispatcher);
    longer.training.seq_len = 8192;
    return test::time_term(api::run(longer), "ep_comm") - test::time_term(api::run(qwen3(4, dispatcher)), "ep_comm");
  };
  EXPECT_NEAR(added_by_doubling("flex") / added_by_doubling("alltoall"), crossing_ratio, 0.01 * crossing_ratio);
}

TEST(MoeFlexDispatch, WithinOneNodeAsDeepEpMeasuredOnH800) {
  // DeepEP's normal kernels on 8 H800 over NVLink, DeepSeek-V3's setting (4096 tokens of 7168, top 8 of 4 groups,
  // fp8 dispatch, bf16 combine): 153 GB/s dispatch and 158 GB/s combine "bottleneck bandwidth", the bytes leaving
  // each GPU over its NVLink per second (deepseek-ai/DeepEP docs/legacy.md, "Normal kernels with NVLink and RDMA
  // forwarding"). Within a node the flex dispatcher is priced as the all-to-all of every copy: its bus bandwidth,
  // at the dispatch's 4096 x 8 x 7168 fp8 bytes per GPU, is within 10 % of both.
  api::CommRequest r;
  r.collective = "alltoall";
  r.size = std::to_string(4096LL * 8 * 7168);
  r.ranks = 8;
  r.cluster.system = "hgx-h800";
  const double busbw = api::run(r).results.at(0).busbw_GBps;
  for (const double measured : {153.0, 158.0}) EXPECT_NEAR(busbw, measured, 0.10 * measured);
}

TEST(MoeFlexDispatch, BadDispatcherIsAFieldError) {
  api::EstimateRequest r = qwen3(1, "deepep");
  const std::string message = test::error_of([&] { api::run(r); });
  EXPECT_TRUE(test::contains(message, "training.moe_dispatcher")) << message;
  EXPECT_TRUE(test::contains(message, "alltoall or flex")) << message;
}

// A dense model routes nothing: the MoE options leave its step time as it is, and the estimate says so.
TEST(MoeFlexDispatch, OnADenseModelTheOptionsChangeNothingAndSaySo) {
  api::EstimateRequest dense;
  dense.model.name_or_path = "llama-3.1-8b";
  dense.cluster.system = "dgx-h100";
  dense.cluster.nodes = 2;
  dense.layout.tp = 8;
  dense.training.global_batch = 32;
  const api::EstimateResult plain = api::run(dense);
  dense.training.moe_dispatcher = "flex";
  dense.training.moe_capacity_factor = 1.0;
  const api::EstimateResult given = api::run(dense);
  EXPECT_DOUBLE_EQ(given.time.step_s, plain.time.step_s);
  EXPECT_FALSE(test::any_contains(plain.memory.notes, "dense"));
  EXPECT_TRUE(test::any_contains(given.memory.notes, "moe_capacity_factor, moe_dispatcher flex change nothing"));
}

TEST(MoeFlexDispatch, ReadFromMegatronAndNemo) {
  const std::string script = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 "
                             "--vocab-size 1000 --num-experts 8 --expert-model-parallel-size 2 ";
  const framework::LaunchConfig flex = framework::read_launch_config(
      "train.sh", script + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep\n");
  EXPECT_NE(flex.training.dump().find("\"moe_dispatcher\":\"flex\""), std::string::npos) << flex.training.dump();
  const framework::LaunchConfig deepep_alone =
      framework::read_launch_config("train.sh", script + "--moe-enable-deepep\n");
  EXPECT_TRUE(test::any_contains(deepep_alone.issues, "needs --moe-token-dispatcher-type flex"));
  const framework::LaunchConfig nemo = framework::read_launch_config(
      "launch.txt", "nemo llm pretrain --factory llama3_8b model.config.moe_token_dispatcher_type=flex\n");
  EXPECT_NE(nemo.training.dump().find("\"moe_dispatcher\":\"flex\""), std::string::npos) << nemo.training.dump();
}

TEST(MoeFlexDispatch, TorchtitansDeepEpAndDeepSpeedsRefusal) {
  const framework::LaunchConfig titan = framework::read_launch_config(
      "train.toml", "[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n[parallelism]\nexpert_parallel_degree = 8\n"
                    "expert_parallel_comm_backend = \"deepep\"\n");
  EXPECT_NE(titan.training.dump().find("\"moe_dispatcher\":\"flex\""), std::string::npos) << titan.training.dump();
  // torchtitan's DeepEP needs experts spread over ranks, none split (deepseek_v3/infra/parallelize.py:100-111).
  api::EstimateRequest one_rank = qwen3(1, "flex");
  one_rank.training.framework = "torchtitan";
  one_rank.layout.ep = 1;
  one_rank.layout.zero = 3;
  EXPECT_TRUE(test::contains(test::error_of([&] { api::run(one_rank); }), "training.moe_dispatcher"));
  api::EstimateRequest deepspeed = qwen3(1, "flex");
  deepspeed.training.framework = "deepspeed";
  EXPECT_TRUE(test::contains(test::error_of([&] { api::run(deepspeed); }), "training.moe_dispatcher"));
}

}  // namespace moe_flex_dispatch_test
