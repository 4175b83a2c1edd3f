// --compile: a model under torch.compile runs its elementwise ops fused. It speeds up the frameworks that train eager
// PyTorch modules (torchtitan, DeepSpeed's Hugging Face modules) and not Megatron-LM, whose Transformer Engine
// kernels are fused already; torchtitan's asynchronous TP runs only compiled (torchtitan/distributed/
// tensor_parallel.py), so `plan` proposes it there only with --compile. The traffic itself is checked against
// PyTorch in tests/python/test_eager_elementwise.py.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"

namespace api = gpuplan::api;

namespace {

double step_s(const std::string& framework, bool compile) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 8192;
  r.training.global_batch = 8;
  r.training.framework = framework;
  r.training.compile = compile;
  if (framework == "deepspeed") r.layout.zero = 3;
  return api::run(r).time.step_s;
}

api::PlanResult torchtitan_plan(bool compile) {
  api::PlanRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 8192;
  r.training.global_batch = 16;
  r.training.framework = "torchtitan";
  r.training.compile = compile;
  r.space.tp = {2};
  r.ranking.top = 20;
  return api::run(r);
}

}  // namespace

TEST(CompileOption, FusesOnlyWhatRunsEager) {
  EXPECT_LT(step_s("torchtitan", true), 0.95 * step_s("torchtitan", false));
  EXPECT_LT(step_s("deepspeed", true), 0.95 * step_s("deepspeed", false));
  EXPECT_DOUBLE_EQ(step_s("megatron", true), step_s("megatron", false));
}

TEST(CompileOption, TorchtitanPlansAsynchronousTpOnlyWhenCompiled) {
  const api::PlanResult eager = torchtitan_plan(false);
  ASSERT_FALSE(eager.plans.empty());
  for (const api::PlanReport& p : eager.plans) EXPECT_FALSE(p.layout.tp_overlap) << p.command;
  const api::PlanResult compiled = torchtitan_plan(true);
  ASSERT_FALSE(compiled.plans.empty());
  bool overlapped = false;
  for (const api::PlanReport& p : compiled.plans) overlapped = overlapped || p.layout.tp_overlap;
  EXPECT_TRUE(overlapped);
  EXPECT_NE(compiled.plans.front().command.find(" --compile"), std::string::npos);
}

TEST(CompileOption, TorchtitanFilesSayCompiledWithoutAsynchronousTp) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.global_batch = 8;
  r.training.framework = "torchtitan";
  r.training.compile = true;
  r.launch.emit = "torchtitan";
  const api::EstimateResult result = api::run(r);
  ASSERT_TRUE(result.launch_files.has_value());
  bool toml_compiles = false;
  for (const api::LaunchFileReport& f : *result.launch_files) {
    if (f.name != "torchtitan.toml") continue;
    toml_compiles = f.text.find("[compile]\nenable = true") != std::string::npos;
    EXPECT_EQ(f.text.find("enable_async_tensor_parallel = true"), std::string::npos);
  }
  EXPECT_TRUE(toml_compiles);
}

TEST(CompileOption, DeepSpeedLauncherAsksTheTrainerToCompile) {
  // Hugging Face's TrainingArguments.torch_compile (--torch_compile) wraps the model in torch.compile.
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.global_batch = 8;
  r.training.framework = "deepspeed";
  r.layout.zero = 3;
  r.launch.emit = "deepspeed";
  for (const bool compile : {false, true}) {
    r.training.compile = compile;
    const api::EstimateResult result = api::run(r);
    ASSERT_TRUE(result.launch_files.has_value());
    for (const api::LaunchFileReport& f : *result.launch_files) {
      if (f.name == "train_deepspeed.sh") {
        EXPECT_EQ(f.text.find(" --torch_compile") != std::string::npos, compile);
      }
    }
  }
}
