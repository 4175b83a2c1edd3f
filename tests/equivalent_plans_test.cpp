// Plans that differ only in choices with no effect on time or memory are one plan listing the alternatives. With
// one rank per replica (dp x cp = 1) ZeRO has nothing to shard: stages 0 to 3 hold the same bytes and take the same
// time, so they are one plan, not a top list filled with copies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

TEST(EquivalentPlans, ZeroStagesWithNothingToShardAreOnePlan) {
  // TP 8 on the 8 GPUs of one node leaves dp = 1 (and cp = 1).
  const auto r = run_cli("plan --model llama-3.1-8b --system dgx-h100 --nodes 1 --tp 8 --cp 1 --seq-len 4096 "
                         "--global-batch 8 --top 5 --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto plans = nlohmann::json::parse(r.out).at("plans");
  ASSERT_FALSE(plans.empty());
  std::set<std::string> layouts;   // each distinct layout once, whatever its ZeRO stage
  for (const auto& p : plans) {
    ASSERT_EQ(p.at("layout").at("dp"), 1);
    auto key = p.at("layout");
    key.erase("zero");
    EXPECT_TRUE(layouts.insert(key.dump()).second) << "listed twice: " << key.dump();
  }
  std::set<int> stages{plans[0].at("layout").at("zero").get<int>()};
  for (const auto& e : plans[0].at("equivalents")) stages.insert(e.at("zero").get<int>());
  EXPECT_EQ(stages, (std::set<int>{0, 1, 2, 3}));
}

// Full recomputation of 44, 45, 46 or 47 of a stage's layers is one layout, and so are no recomputation and full
// recomputation of one layer: recomputing more layers only adds time. The list shows the fewest that fit, in one
// row, and each further row is another layout.
namespace equivalent_plans_test {

void expect_each_layout_once(const std::string& job) {
  const auto r = run_cli("plan " + job + " --top 5 --threads 1 --json");
  EXPECT_EQ(r.status, 0) << r.err;
  const auto plans = nlohmann::json::parse(r.out).at("plans");
  EXPECT_EQ(plans.size(), 5U);
  std::set<std::string> layouts;   // each layout once, whatever its count of recomputed layers
  for (const auto& p : plans) {
    auto key = p.at("layout");
    if (key.at("recompute") == "none") key["recompute"] = "full";
    key.erase("recompute_layers");
    EXPECT_TRUE(layouts.insert(key.dump()).second) << "listed twice: " << key.dump();
  }
}

}  // namespace equivalent_plans_test

TEST(EquivalentPlans, RecomputedLayerCountsAreOneRow) {
  equivalent_plans_test::expect_each_layout_once(
      "--model llama-3.1-70b --system dgx-h100 --gpus 64 --seq-len 8192 --global-batch 256");
  const std::string job = "--model qwen3-30b-a3b --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 512";
  equivalent_plans_test::expect_each_layout_once(job);
  // The first plan recomputes part of its stage; one layer fewer does not fit, so its count is the fewest.
  const auto r = run_cli("plan " + job + " --top 1 --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto best = nlohmann::json::parse(r.out).at("plans").at(0).at("layout");
  ASSERT_EQ(best.at("recompute"), "full");
  const int layers = best.at("recompute_layers").get<int>();
  ASSERT_GT(layers, 1);
  ASSERT_LT(layers, 48);
  std::string layout;
  for (const char* degree : {"tp", "pp", "cp", "ep", "dp", "micro_batch", "zero"}) {
    std::string flag = degree;
    if (flag == "micro_batch") flag = "micro-batch";
    layout += " --" + flag + " " + std::to_string(best.at(degree).get<int>());
  }
  const auto fewer = run_cli("estimate " + job + layout + " --recompute full --recompute-layers " +
                             std::to_string(layers - 1) + " --json");
  ASSERT_EQ(fewer.status, 0) << fewer.err;
  EXPECT_FALSE(nlohmann::json::parse(fewer.out).at("memory").at("fits").get<bool>());
}
