// Where pp x vpp does not divide the layers and no split is given, memory and estimate take the split Megatron
// users write for it (lighter first and last stages) and say so in a note, instead of refusing the layout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;
using nlohmann::json;

namespace {

json stages_of(const std::string& args) {
  const auto r = run_cli(args + " --all-stages --json");
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  const json j = json::parse(r.out.empty() ? "{}" : r.out);
  return j.contains("memory") ? j.at("memory") : j;
}

}  // namespace

TEST(AutomaticPipelineSplit, MemoryTakesLighterEndsAndSaysSo) {
  // Llama-3.1-405B has 126 layers. At pp 16 the middle ranks take ceil(126 / 16) = 8, 14 x 8 = 112, leaving
  // 126 - 112 = 14 for the two ends: 7 and 7 (the split its authors describe: one layer fewer on each end).
  const std::string memory = "memory --model llama-3.1-405b --gpus 128 --tp 8 --pp 16 --global-batch 32";
  const json m = stages_of(memory);
  ASSERT_TRUE(m.contains("stages"));
  const json& stages = m.at("stages");
  ASSERT_EQ(stages.size(), 16U);
  EXPECT_EQ(stages.front().at("layers"), 7);
  EXPECT_EQ(stages[1].at("layers"), 8);
  EXPECT_EQ(stages.back().at("layers"), 7);
  ASSERT_EQ(m.at("notes").size(), 1U);
  const std::string note = m.at("notes")[0];
  EXPECT_NE(note.find("--first-stage-layers 7 --last-stage-layers 7"), std::string::npos) << note;
  // The same numbers as the split written out.
  const json given = stages_of(memory + " --first-stage-layers 7 --last-stage-layers 7");
  EXPECT_EQ(given.at("stages"), stages);
  EXPECT_TRUE(given.at("notes").empty());
  const auto text = run_cli(memory);
  EXPECT_NE(text.out.find("Note: " + note), std::string::npos) << text.out;
}

TEST(AutomaticPipelineSplit, EstimateWithInterleavingTakesWholeChunks) {
  // vpp 2: each rank's layers are a multiple of 2. Middle ranks 8 (ceil(126 / 16), already even), the ends share
  // 14; 7 and 7 are odd, so the ends take 8 and 6 (the first never the lighter).
  const json m = stages_of("estimate --model llama-3.1-405b --system dgx-h100 --nodes 16 --tp 8 --pp 16 --vpp 2 "
                           "--global-batch 32 --seq-len 8192 --recompute full");
  ASSERT_TRUE(m.contains("stages"));
  EXPECT_EQ(m.at("stages").front().at("layers"), 8);
  EXPECT_EQ(m.at("stages")[8].at("layers"), 8);
  EXPECT_EQ(m.at("stages").back().at("layers"), 6);
  ASSERT_EQ(m.at("notes").size(), 1U);
  EXPECT_NE(m.at("notes")[0].get<std::string>().find("--first-stage-layers 8 --last-stage-layers 6"),
            std::string::npos);
}

TEST(AutomaticPipelineSplit, NoSplitExistsStillRefuses) {
  // DeepSeek-V3's 61 layers at pp 16, vpp 2: middle ranks 4 each (ceil(61 / 16)), 61 - 56 = 5 left for the ends,
  // which cannot be two multiples of 2.
  const auto r = run_cli("memory --model deepseek-v3 --gpus 2048 --tp 8 --pp 16 --vpp 2 --ep 8");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("--pp"), std::string::npos) << r.err;
}
