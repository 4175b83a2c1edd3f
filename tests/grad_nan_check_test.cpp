// Megatron-LM's NaN check of the gradients (--check-for-nan-in-loss-and-grad, on by default): read from and written
// to launch scripts, and priced as one more read of the gradient buffer each step (step_time_model_test.cpp derives
// the bytes).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

double step_s(const gpuplan::test::CliRun& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out).at("time").at("step_s").get<double>();
}

// A small GPT job as a Megatron-LM launch script, with `extra` flags.
std::string script(const std::string& extra) {
  return "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
         "  --num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 \\\n"
         "  --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 32000 " +
         extra + "\n";
}

}  // namespace

TEST(GradNanCheck, ReadFromAMegatronScriptAndPriced) {
  const std::string folder = "/tmp/gpuplan_grad_nan_check";
  std::filesystem::create_directories(folder);
  const std::string on = folder + "/on.sh", off = folder + "/off.sh";
  std::ofstream(on) << script("");
  std::ofstream(off) << script("--no-check-for-nan-in-loss-and-grad");
  const std::string cluster = " --system dgx-h100 --nodes 1 --json";
  const double checked = step_s(run_cli("estimate --from " + on + cluster));
  const double unchecked = step_s(run_cli("estimate --from " + off + cluster));
  // The script's flag and the option say the same; the check costs time, and only with Megatron's DDP.
  EXPECT_EQ(unchecked, step_s(run_cli("estimate --from " + on + cluster + " --no-grad-nan-check")));
  EXPECT_EQ(checked, step_s(run_cli("estimate --from " + off + cluster + " --grad-nan-check")));
  EXPECT_GT(checked, unchecked);
  std::filesystem::remove_all(folder);
}

TEST(GradNanCheck, OnlyMegatronAndNemoCheck) {
  const std::string job = "estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --zero 3 --json";
  EXPECT_EQ(step_s(run_cli(job + " --framework deepspeed")),
            step_s(run_cli(job + " --framework deepspeed --no-grad-nan-check")));
  EXPECT_EQ(step_s(run_cli(job + " --framework torchtitan")),
            step_s(run_cli(job + " --framework torchtitan --no-grad-nan-check")));
  EXPECT_GT(step_s(run_cli(job + " --framework nemo")), step_s(run_cli(job + " --framework nemo --no-grad-nan-check")));
}

TEST(GradNanCheck, WrittenToMegatronScripts) {
  const std::string job = "estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --emit megatron";
  const auto off = run_cli(job + " --no-grad-nan-check"), on = run_cli(job);
  ASSERT_EQ(off.status, 0) << off.err;
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_NE(off.out.find("--no-check-for-nan-in-loss-and-grad"), std::string::npos);
  EXPECT_EQ(on.out.find("--no-check-for-nan-in-loss-and-grad"), std::string::npos);
}
