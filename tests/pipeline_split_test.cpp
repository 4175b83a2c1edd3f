// Uneven pipeline splits as Megatron-Core accepts them (--decoder-first/last-pipeline-num-layers, with or without
// --num-virtual-stages-per-pipeline-rank): where the layers go, which splits are refused, and that estimate and
// plan use them for models whose layers do not divide by pp x vpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "gpuplan/error.hpp"
#include "memory/internal.hpp"

using gpuplan::Layout;
using gpuplan::test::run_cli;

namespace {

Layout uneven(std::int64_t pp, std::int64_t vpp, std::int64_t first, std::int64_t last) {
  Layout l;
  l.pp = pp;
  l.vpp = vpp;
  l.first_stage_layers = first;
  l.last_stage_layers = last;
  return l;
}

}  // namespace

TEST(PipelineSplit, ChunksTakeTheirLayersRoundByRound) {
  // 14 layers, pp 3, vpp 2, first 4 and last 4: the middle rank holds 6. Each round of chunks places
  // 4/2 + 6/2 + 4/2 = 7 layers: rank 0 [0,2), rank 1 [2,5), rank 2 [5,7), then rank 0 [7,9), rank 1 [9,12),
  // rank 2 [12,14) (Megatron-Core's get_transformer_layer_offset).
  const auto split = gpuplan::memory::pipeline_split(14, uneven(3, 2, 4, 4));
  EXPECT_EQ(split.middle, 6);
  EXPECT_EQ(split.chunk(0, 0), std::make_pair(std::int64_t{0}, std::int64_t{2}));
  EXPECT_EQ(split.chunk(1, 0), std::make_pair(std::int64_t{2}, std::int64_t{5}));
  EXPECT_EQ(split.chunk(2, 0), std::make_pair(std::int64_t{5}, std::int64_t{7}));
  EXPECT_EQ(split.chunk(0, 1), std::make_pair(std::int64_t{7}, std::int64_t{9}));
  EXPECT_EQ(split.chunk(1, 1), std::make_pair(std::int64_t{9}, std::int64_t{12}));
  EXPECT_EQ(split.chunk(2, 1), std::make_pair(std::int64_t{12}, std::int64_t{14}));
}

TEST(PipelineSplit, MegatronsRulesForUnevenStages) {
  using gpuplan::memory::check_pipeline_split;
  EXPECT_NO_THROW(check_pipeline_split(126, uneven(16, 1, 7, 7)));   // 7 + 14 x 8 + 7
  EXPECT_NO_THROW(check_pipeline_split(126, uneven(16, 2, 8, 6)));   // 8 + 14 x 8 + 6, each a multiple of 2
  EXPECT_THROW(check_pipeline_split(126, uneven(16, 2, 7, 7)), gpuplan::InputError);   // 7 is not a multiple of 2
  EXPECT_THROW(check_pipeline_split(126, uneven(16, 1, 7, 6)), gpuplan::InputError);   // 113 over 14 stages
  EXPECT_THROW(check_pipeline_split(126, uneven(1, 1, 7, -1)), gpuplan::InputError);   // one stage
}

TEST(PipelineSplit, LighterEndsFillTheMiddleRanks) {
  using gpuplan::memory::lighter_ends;
  EXPECT_EQ(lighter_ends(126, 16, 1), std::make_pair(std::int64_t{7}, std::int64_t{7}));   // Llama-3.1-405B
  EXPECT_EQ(lighter_ends(126, 16, 2), std::make_pair(std::int64_t{8}, std::int64_t{6}));
  EXPECT_EQ(lighter_ends(61, 16, 1), std::make_pair(std::int64_t{3}, std::int64_t{2}));    // DeepSeek-V3
  EXPECT_EQ(lighter_ends(61, 16, 2).first, -1);   // 61 - 14 x 4 = 5 layers cannot end in two chunks of 2
}

TEST(PipelineSplit, EstimateTakesAnUnevenSplitWithInterleaving) {
  const auto r = run_cli("memory --model llama-3.1-405b --gpus 128 --tp 8 --pp 16 --vpp 2 --first-stage-layers 8 "
                         "--last-stage-layers 6 --global-batch 32 --all-stages --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto stages = nlohmann::json::parse(r.out).at("stages");
  ASSERT_EQ(stages.size(), 16U);
  EXPECT_EQ(stages.front().at("layers"), 8);
  EXPECT_EQ(stages[7].at("layers"), 8);
  EXPECT_EQ(stages.back().at("layers"), 6);
  const auto refused = run_cli("memory --model llama-3.1-405b --gpus 128 --tp 8 --pp 16 --vpp 2 "
                               "--first-stage-layers 7 --last-stage-layers 7");
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("multiple of vpp"), std::string::npos) << refused.err;
  EXPECT_EQ(run_cli("memory --model llama-3.1-8b --first-stage-layers 0 --pp 2").status, 2);   // Megatron: > 0
}

TEST(PipelineSplit, PlanSearchesUnevenSplitsWhereTheLayersDoNotDivide) {
  // Llama-3.1-405B's 126 layers do not divide by 16: its authors trained it at pp 16 with lighter end stages.
  const auto r = run_cli("plan --model llama-3.1-405b --system dgx-h100 --nodes 16 --seq-len 8192 "
                         "--global-batch 512 --pp 16 --top 1 --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto plans = nlohmann::json::parse(r.out).at("plans");
  ASSERT_EQ(plans.size(), 1U);
  const auto& layout = plans[0].at("layout");
  EXPECT_EQ(layout.at("pp"), 16);
  EXPECT_EQ(layout.at("first_stage_layers").get<int>() + layout.at("last_stage_layers").get<int>() + 14 * 8, 126);
  const std::string command = plans[0].at("command");
  EXPECT_NE(command.find("--first-stage-layers"), std::string::npos) << command;
}
