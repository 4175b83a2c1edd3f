// The `gpuplan model` command: JSON contract keys and exit status 2 for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;
using CliResult = gpuplan::test::CliRun;

TEST(ModelCli, JsonContract) {
  const CliResult r = run_cli("model gpt2 --json");
  ASSERT_EQ(r.status, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("params").at("total").get<std::int64_t>(), 124439808);  // keras-hub gpt2_base_en
  // GPT-2 embedding: 50257 x 768 tokens + 1024 x 768 positions.
  EXPECT_EQ(j.at("params").at("embedding").get<std::int64_t>(), 50257 * 768 + 1024 * 768);
  EXPECT_EQ(j.at("params").at("active").get<std::int64_t>(), 124439808);
  EXPECT_GT(j.at("flops").at("per_token_training").get<double>(), 0);
  EXPECT_EQ(j.at("flops").at("seq_len").get<int>(), 1024);  // GPT-2's context, under the 2048 cap
}

TEST(ModelCli, OverridesApply) {
  // gpt2 with 24 layers: 12 more layers of 12h^2 + 13h parameters (h = 768).
  const CliResult r = run_cli("model gpt2 --layers 24 --json");
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("params").at("total").get<std::int64_t>(),
            124439808 + 12 * (12 * 768 * 768 + 13 * 768));
}

TEST(ModelCli, BadInputExitsTwo) {
  EXPECT_EQ(run_cli("model gpt2 --layers 0").status, 2);
  EXPECT_EQ(run_cli("model gtp2").status, 2);
  EXPECT_EQ(run_cli("model gpt2 --mlp relu2").status, 2);
  EXPECT_EQ(run_cli("model llama-2-7b --kv-heads 5").status, 2);
  EXPECT_EQ(run_cli("model").status, 2);
}
