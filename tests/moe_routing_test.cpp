// Group-limited routing (DeepSeek-V2's device-limited, DeepSeek-V3's node-limited routing; Megatron-Core's
// --moe-router-num-groups and --moe-router-group-topk): a token's experts lie in the groups it picked, so under the
// flex dispatcher it crosses to fewer nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/moe_routing.hpp"
#include "cli_runner.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace moe_routing_test {

struct Routing {
  int experts, top_k, groups, chosen, nodes;
};

MoeConfig moe_of(const Routing& r) {
  MoeConfig moe;
  moe.routed_experts = r.experts;
  moe.top_k = r.top_k;
  moe.router_groups = r.groups;
  moe.router_groups_chosen = r.chosen;
  return moe;
}

double choose(int n, int k) {
  double ways = 1;
  for (int i = 0; i < k; ++i) ways = ways * (n - i) / (i + 1);
  return ways;
}

// Megatron-Core's group_limited_topk on independent uniform scores (balanced routing): a group scores the sum of its
// best top_k / chosen experts, the `chosen` best groups are kept, and the token takes the top_k experts among
// theirs. The mean count of nodes other than the token's own that it reaches, with its own node any of them.
double simulated_remote_nodes(const Routing& r, int tokens) {
  std::mt19937 random(20261207);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int per_group = r.experts / r.groups, per_node = r.experts / r.nodes, best = r.top_k / r.chosen;
  std::vector<double> scores(r.experts);
  std::vector<int> groups(r.groups), kept;
  double reached = 0;
  for (int t = 0; t < tokens; ++t) {
    for (double& s : scores) s = uniform(random);
    std::vector<double> group_score(r.groups);
    for (int g = 0; g < r.groups; ++g) {
      std::vector<double> own(scores.begin() + g * per_group, scores.begin() + (g + 1) * per_group);
      std::partial_sort(own.begin(), own.begin() + best, own.end(), std::greater<>());
      group_score[g] = std::accumulate(own.begin(), own.begin() + best, 0.0);
    }
    std::iota(groups.begin(), groups.end(), 0);
    std::partial_sort(groups.begin(), groups.begin() + r.chosen, groups.end(),
                      [&](int a, int b) { return group_score[a] > group_score[b]; });
    kept.clear();
    for (int i = 0; i < r.chosen; ++i)
      for (int e = groups[i] * per_group; e < (groups[i] + 1) * per_group; ++e) kept.push_back(e);
    std::partial_sort(kept.begin(), kept.begin() + r.top_k, kept.end(),
                      [&](int a, int b) { return scores[a] > scores[b]; });
    std::set<int> nodes;
    for (int i = 0; i < r.top_k; ++i) nodes.insert(kept[i] / per_node);
    reached += static_cast<double>(nodes.size());
  }
  return reached / tokens * (r.nodes - 1) / r.nodes;
}

TEST(MoeRouting, GroupsOnWholeNodesLimitTheNodesReached) {
  // A node holding whole groups is reached exactly when one of its groups is picked: DeepSeek-V3's 4 of 8 groups on
  // 8 nodes reach 7 x (1 - C(7, 4) / C(8, 4)) others, on 4 nodes (two groups each) 3 x (1 - C(6, 4) / C(8, 4)).
  EXPECT_NEAR(perf::expected_remote_nodes(moe_of({256, 8, 8, 4, 8}), 8), 7 * (1 - choose(7, 4) / choose(8, 4)), 1e-12);
  EXPECT_NEAR(perf::expected_remote_nodes(moe_of({256, 8, 8, 4, 4}), 4), 3 * (1 - choose(6, 4) / choose(8, 4)), 1e-12);
  // DeepSeek-V2's 3 of 8 groups with groups on 8 nodes.
  EXPECT_NEAR(perf::expected_remote_nodes(moe_of({160, 6, 8, 3, 8}), 8), 7 * (1 - choose(7, 3) / choose(8, 3)), 1e-12);
}

TEST(MoeRouting, WithoutALimitAnyExperts) {
  for (const Routing& r : {Routing{256, 8, 1, 1, 8}, Routing{256, 8, 8, 8, 8}, Routing{64, 6, 4, 2, 3}}) {
    // one group, every group chosen, or experts that do not split over the nodes (64 over 3): any top_k
    EXPECT_DOUBLE_EQ(perf::expected_remote_nodes(moe_of(r), r.nodes),
                     perf::expected_remote_nodes(r.experts, r.top_k, r.nodes));
  }
  EXPECT_EQ(perf::expected_remote_nodes(moe_of({256, 8, 8, 4, 1}), 1), 0);
}

TEST(MoeRouting, AsMegatronsGroupLimitedTopkRoutesRandomScores) {
  for (const Routing& r : {Routing{256, 8, 8, 4, 8}, Routing{256, 8, 8, 4, 4}, Routing{256, 8, 8, 4, 16},
                           Routing{160, 6, 8, 3, 2}, Routing{96, 6, 8, 3, 3}, Routing{64, 4, 8, 2, 4}}) {
    const double simulated = simulated_remote_nodes(r, 20000);
    EXPECT_NEAR(perf::expected_remote_nodes(moe_of(r), r.nodes), simulated, 0.03 * simulated)
        << r.experts << " experts, top " << r.top_k << ", " << r.chosen << " of " << r.groups << " groups, "
        << r.nodes << " nodes";
  }
}

std::string deepseek_v3_config(int groups) {
  nlohmann::json config = nlohmann::json::parse(
      read_text_file(std::string(GPUPLAN_TEST_DATA_DIR) + "/hf-configs/deepseek-ai--DeepSeek-V3/config.json", "test"));
  config["n_group"] = groups;
  config["topk_group"] = groups == 1 ? 1 : 4;
  return config.dump();
}

// DeepSeek-V3 cut to 4 layers, expert-parallel over 4 DGX H100 nodes with the flex dispatcher.
api::EstimateRequest deepseek_v3(int groups, std::int64_t seq_len) {
  api::EstimateRequest r;
  r.model.name_or_path = "deepseek-v3";
  r.model.config = deepseek_v3_config(groups);
  r.overrides.layers = 4;
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 4;
  r.training.seq_len = seq_len;
  r.training.global_batch = 32;
  r.training.moe_dispatcher = "flex";
  r.layout.ep = 32;
  r.layout.zero = 1;
  return r;
}

TEST(MoeRouting, NodeLimitedRoutingCrossesToFewerNodes) {
  // What twice the tokens add to ep_comm is the NIC's bandwidth term, which scales with the nodes a token reaches:
  // 3 x (1 - C(6, 4) / C(8, 4)) with two of the 8 groups on each node, 3 x (1 - C(192, 8) / C(256, 8)) without.
  auto added_by_doubling = [](int groups) {
    return test::time_term(api::run(deepseek_v3(groups, 8192)), "ep_comm") -
           test::time_term(api::run(deepseek_v3(groups, 4096)), "ep_comm");
  };
  const double limited = 3 * (1 - choose(6, 4) / choose(8, 4));
  const double unlimited = 3 * (1 - choose(192, 8) / choose(256, 8));
  EXPECT_NEAR(added_by_doubling(8) / added_by_doubling(1), limited / unlimited, 0.01 * limited / unlimited);
}

TEST(MoeRouting, ReadFromHuggingFaceConfigs) {
  const ModelConfig v3 = model_from_hf_config(deepseek_v3_config(8), "v3");
  EXPECT_EQ(v3.moe.router_groups, 8);
  EXPECT_EQ(v3.moe.router_groups_chosen, 4);
  // DeepSeek-V2's greedy routing ignores its groups (modeling_deepseek.py, MoEGate).
  nlohmann::json v2 = nlohmann::json::parse(deepseek_v3_config(8));
  v2["model_type"] = "deepseek_v2";
  v2["topk_method"] = "greedy";
  EXPECT_EQ(model_from_hf_config(v2.dump(), "v2").moe.router_groups, 1);
  v2["topk_method"] = "group_limited_greedy";
  EXPECT_EQ(model_from_hf_config(v2.dump(), "v2").moe.router_groups, 8);
}

// The errors name the keys a config.json or a Megatron-LM script sets: no gpuplan option sets the groups.
TEST(MoeRouting, GroupsThatCannotRouteAreFieldErrors) {
  nlohmann::json config = nlohmann::json::parse(deepseek_v3_config(8));
  config["n_group"] = 7;   // 256 experts do not split into 7 groups
  EXPECT_TRUE(test::contains(test::error_of([&] { model_from_hf_config(config.dump(), "v3"); }), "(n_group, --moe-router-num-groups): 7"));
  config["n_group"] = 64;
  config["topk_group"] = 1;   // one group of 4 experts cannot give 8
  const std::string message = test::error_of([&] { model_from_hf_config(config.dump(), "v3"); });
  EXPECT_TRUE(test::contains(message, "(topk_group, --moe-router-group-topk): 1")) << message;
  EXPECT_TRUE(test::contains(message, "fewer than top_k 8")) << message;
}

TEST(MoeRouting, AnotherExpertCountRoutesWithoutTheGroups) {
  api::ModelRequest r;
  r.model.name_or_path = "deepseek-v3";
  r.overrides.experts = 12;   // 8 groups do not divide 12 experts
  const api::ModelResult twelve = api::run(r);
  ASSERT_TRUE(twelve.architecture.moe.has_value());
  EXPECT_EQ(twelve.architecture.moe->router_groups, 1);
  r.overrides.experts = 256;   // the model's own count keeps its groups
  EXPECT_EQ(api::run(r).architecture.moe->router_groups, 8);
}

TEST(MoeRouting, WrittenToMegatronScripts) {
  const auto written = test::run_cli("estimate --model deepseek-v3 --system dgx-h100 --nodes 8 --ep 64 --emit megatron");
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_NE(written.out.find("--moe-router-num-groups 8"), std::string::npos);
  EXPECT_NE(written.out.find("--moe-router-group-topk 4"), std::string::npos);
}

}  // namespace moe_routing_test
