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

// Llama-3.1-8B on one DGX H100 under `framework` (DeepSpeed with ZeRO-3).
api::EstimateRequest llama_8b(const std::string& framework, bool compile) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.global_batch = 8;
  r.training.framework = framework;
  r.training.compile = compile;
  if (framework == "deepspeed") r.layout.zero = 3;
  return r;
}

double step_s(const std::string& framework, bool compile) {
  api::EstimateRequest r = llama_8b(framework, compile);
  r.training.seq_len = 8192;
  return api::run(r).time.step_s;
}

// The text of the launch file `name` that `r` emits.
std::string launch_file(const api::EstimateRequest& r, const std::string& name) {
  const api::EstimateResult result = api::run(r);
  if (result.launch_files)
    for (const api::LaunchFileReport& f : *result.launch_files)
      if (f.name == name) return f.text;
  ADD_FAILURE() << "no " << name;
  return "";
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
  api::EstimateRequest r = llama_8b("torchtitan", true);
  r.launch.emit = "torchtitan";
  const std::string toml = launch_file(r, "torchtitan.toml");
  EXPECT_NE(toml.find("[compile]\nenable = true"), std::string::npos);
  EXPECT_EQ(toml.find("enable_async_tensor_parallel = true"), std::string::npos);
}

TEST(CompileOption, DeepSpeedLauncherAsksTheTrainerToCompile) {
  // Hugging Face's TrainingArguments.torch_compile (--torch_compile) wraps the model in torch.compile.
  for (const bool compile : {false, true}) {
    api::EstimateRequest r = llama_8b("deepspeed", compile);
    r.launch.emit = "deepspeed";
    EXPECT_EQ(launch_file(r, "train_deepspeed.sh").find(" --torch_compile") != std::string::npos, compile);
  }
}

// torchtitan builds no asynchronous TP without a TP mesh (parallelize.py checks it only when TP is enabled), so at
// TP 1 --tp-overlap neither compiles the model nor changes its price.
TEST(CompileOption, TorchtitanAsynchronousTpCompilesOnlyWithTp) {
  api::EstimateRequest overlap = llama_8b("torchtitan", false);
  overlap.training.seq_len = 8192;
  overlap.timing.tp_overlap = true;
  overlap.launch.emit = "torchtitan";
  EXPECT_EQ(launch_file(overlap, "torchtitan.toml").find("[compile]"), std::string::npos);
  EXPECT_DOUBLE_EQ(api::run(overlap).time.step_s, step_s("torchtitan", false));
  overlap.layout.tp = 2;
  overlap.layout.sequence_parallel = true;
  EXPECT_NE(launch_file(overlap, "torchtitan.toml").find("[compile]\nenable = true"), std::string::npos);
}
