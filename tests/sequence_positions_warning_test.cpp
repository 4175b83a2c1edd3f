// A sequence longer than the model's maximum positions is warned about, in text and in JSON, by every command
// where a sequence length and a model with known positions meet. Rotary models are worded as running beyond the
// positions they were trained for; learned position tables have no rows past their last.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

// Llama-3.1-8B: rotary, max_position_embeddings 131072 (its config.json). GPT-2: learned, n_positions 1024.
constexpr const char* kRotaryWords = "runs beyond the positions the model was trained for";
constexpr const char* kLearnedWords = "its learned position table has no rows beyond them";

void expect_warned(const std::string& args, const std::string& words, const std::string& json_pointer) {
  const auto text = run_cli(args);
  ASSERT_EQ(text.status, 0) << args << "\n" << text.err;
  EXPECT_NE((text.out + text.err).find(words), std::string::npos) << args << "\n" << text.out;
  const auto json = run_cli(args + " --json");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto warnings = nlohmann::json::parse(json.out).at(nlohmann::json::json_pointer(json_pointer));
  ASSERT_EQ(warnings.size(), 1u) << args;
  EXPECT_NE(warnings[0].get<std::string>().find(words), std::string::npos) << warnings.dump();
}

}  // namespace

TEST(SequencePositions, ModelWarns) {
  expect_warned("model llama-3.1-8b --seq-len 200000", kRotaryWords, "/warnings");
  expect_warned("model gpt2 --seq-len 2048", kLearnedWords, "/warnings");
  const auto within = run_cli("model llama-3.1-8b --seq-len 131072 --json");
  EXPECT_TRUE(nlohmann::json::parse(within.out).at("warnings").empty());
}

TEST(SequencePositions, SizeWarns) {
  expect_warned("size --model gpt2 --tokens 1B --systems dgx-h100 --nodes 1 --seq-len 2048 --threads 1",
                kLearnedWords, "/warnings");
}

TEST(SequencePositions, MemoryEstimateAndPlanSayRotaryPositionsWereNotTrained) {
  expect_warned("memory --model llama-3.1-8b --seq-len 200000", kRotaryWords, "/warnings");
  expect_warned("estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --tp 1 --cp 8 --recompute full "
                "--seq-len 262144 --global-batch 1",
                kRotaryWords, "/memory/warnings");
  expect_warned("plan --model gpt2 --system dgx-h100 --nodes 1 --seq-len 2048 --global-batch 8 --threads 1 --top 1",
                kLearnedWords, "/job/warnings");
}
