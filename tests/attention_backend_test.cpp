// Transformer Engine's attention backend (Megatron-LM's --attention-backend, NeMo's model.config.attention_backend):
// 'flash' runs the flash-attn package's FlashAttention-2 kernels, 'fused' cuDNN's, 'auto' lets Transformer Engine
// choose (cuDNN on Hopper and newer: transformer_engine/pytorch/attention/dot_product_attention/utils.py
// get_attention_backend prefers FusedAttention there "for performance reasons"). The expected FlashAttention-2
// rate is Microsoft's Azure benchmarking guide's (head dim 128, batch 2, 8192 tokens: 329.3 TFLOP/s on an H200,
// whose peak and die are the H100 SXM's 989.4 TFLOP/s), derived here by hand.
#include <gtest/gtest.h>

#include <string>

#include "api/measured_runs.hpp"
#include "framework/launch.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace attention_backend_test {

api::EstimateRequest llama_8b_on_one_h100_node(const std::string& backend) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 8192;
  r.training.global_batch = 8;   // one microbatch of one sequence per GPU
  r.layout.zero = 1;
  r.layout.attention_backend = backend;
  return r;
}

// The forward's attention kernels of one 8192-token sequence through Llama 3.1 8B's 32 layers of 32 query heads of
// 128: causal, half the s x s products, at `long_keys` of the peak scaled by keys / (keys + 210)
// (flash_attention_half_length in data/perf.json).
double attention_forward_s(double long_keys) {
  const double flops = 32 * 2.0 * 8192 * 8192 * 32 * (128 + 128) * 0.5;
  return flops / (989.4e12 * long_keys * 8192 / (8192 + 210));
}

TEST(AttentionBackend, FlashRunsFlashAttention2OnHopper) {
  const api::EstimateResult automatic = api::run(llama_8b_on_one_h100_node("auto"));
  const api::EstimateResult flash = api::run(llama_8b_on_one_h100_node("flash"));
  const double flash_attention_2 = 329.3 / 989.4 / (8192.0 / (8192 + 210));
  // Only the attention kernels change: auto prices cuDNN's at 0.50 of the peak (architectures.hopper).
  EXPECT_NEAR(test::time_term(flash, "forward") - test::time_term(automatic, "forward"),
              attention_forward_s(flash_attention_2) - attention_forward_s(0.50), 1e-4);
  EXPECT_GT(flash.time.step_s, automatic.time.step_s);
  EXPECT_NE(flash.cluster.attention_efficiency_source.find("flash-attn"), std::string::npos);
  EXPECT_NE(flash.cluster.attention_efficiency_source.find("FlashAttention-2"), std::string::npos);
}

TEST(AttentionBackend, FusedIsWhatAutoPicksOnHopper) {
  const api::EstimateResult automatic = api::run(llama_8b_on_one_h100_node("auto"));
  const api::EstimateResult fused = api::run(llama_8b_on_one_h100_node("fused"));
  EXPECT_DOUBLE_EQ(fused.time.step_s, automatic.time.step_s);
  EXPECT_EQ(fused.cluster.attention_efficiency_source, automatic.cluster.attention_efficiency_source);
}

void expect_refused(api::EstimateRequest r, const std::string& given) {
  try {
    api::run(r);
    ADD_FAILURE() << "accepted " << given;
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "layout.attention_backend");
    EXPECT_NE(e.given().find(given), std::string::npos) << e.given();
  }
}

// A backend is Transformer Engine's: not for eager attention (Megatron's unfused backend) nor for modules that
// call PyTorch's scaled_dot_product_attention; a name outside auto, fused and flash is refused.
TEST(AttentionBackend, OnlyForTransformerEnginesFlashAttention) {
  api::EstimateRequest eager = llama_8b_on_one_h100_node("flash");
  eager.layout.attention = "eager";
  expect_refused(eager, "flash with eager attention");
  api::EstimateRequest titan = llama_8b_on_one_h100_node("fused");
  titan.training.framework = "torchtitan";
  expect_refused(titan, "torchtitan's modules");
  expect_refused(llama_8b_on_one_h100_node("cudnn"), "cudnn");
}

std::string backend_read_from(const std::string& flag_value) {
  const framework::LaunchConfig c = framework::read_launch_config(
      "train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
                  "--num-attention-heads 4 --vocab-size 1000 --attention-backend " + flag_value + "\n");
  EXPECT_TRUE(c.errors.empty()) << ::testing::PrintToString(c.errors);
  const std::string attention = c.layout.value("attention", std::string("?"));
  return attention + " " + c.layout.value("attention_backend", std::string("auto"));
}

TEST(AttentionBackend, ReadFromMegatronsFlag) {
  EXPECT_EQ(backend_read_from("flash"), "flash flash");
  EXPECT_EQ(backend_read_from("fused"), "flash fused");
  EXPECT_EQ(backend_read_from("auto"), "flash auto");
  EXPECT_EQ(backend_read_from("unfused"), "eager auto");
  EXPECT_EQ(backend_read_from("local"), "eager auto");
}

// NeMo's model.config.attention_backend, as an override of a recipe (and as the enum's own name, AttnBackend.x);
// a value outside Megatron-Core's is listed as not understood and priced as auto.
TEST(AttentionBackend, ReadFromNemosConfig) {
  const auto read = [](const std::string& value) {
    return framework::read_launch_config(
        "launch.txt", "nemo llm pretrain --factory llama3_8b model.config.attention_backend=" + value + "\n");
  };
  for (const std::string value : {"flash", "AttnBackend.flash"}) {
    const framework::LaunchConfig c = read(value);
    EXPECT_EQ(c.layout.value("attention", std::string("?")), "flash") << value;
    EXPECT_EQ(c.layout.value("attention_backend", std::string("?")), "flash") << value;
  }
  const framework::LaunchConfig odd = read("cudnn");
  EXPECT_FALSE(odd.layout.contains("attention_backend"));
  bool listed = false;
  for (const std::string& line : odd.not_understood) listed = listed || line.find("attention_backend") != std::string::npos;
  EXPECT_TRUE(listed) << ::testing::PrintToString(odd.not_understood);
}

// A launch file gpuplan writes asks for the backend the estimate priced, and reads back as the same.
TEST(AttentionBackend, WrittenToMegatronAndNemoLaunchFiles) {
  for (const std::string framework : {"megatron", "nemo"}) {
    nlohmann::json job = {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"},     {"nodes", 1},
                          {"global_batch", 8},       {"attention_backend", "flash"}, {"framework", framework},
                          {"emit", framework}};
    const std::string files = api::run_json(api::Question::estimate, job).at("launch_files").dump();
    const std::string option = framework == "megatron" ? "--attention-backend " : "model.config.attention_backend=";
    EXPECT_NE(files.find(option + "flash"), std::string::npos) << framework;
  }
}

// gpuplan calibrate --runs: a CSV column, and Megatron-LM's arguments block ("attention_backend ... AttnBackend.x").
TEST(AttentionBackend, ReadFromMeasuredRuns) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  const auto rows = api::detail::read_runs(
      {"runs.csv", "model,gpus,attention_backend,step_s\nllama-3.1-8b,8,flash,5\nllama-3.1-8b,8,,5\n"}, defaults);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].request.layout.attention_backend, "flash");
  EXPECT_EQ(rows[1].request.layout.attention_backend, "auto");
  for (const std::string backend : {"flash", "fused"}) {
    const std::string with =
        test::megatron_log("  attention_backend ............................... AttnBackend." + backend);
    const auto runs = api::detail::read_runs({"train.log", with}, defaults);
    ASSERT_FALSE(runs.empty());
    EXPECT_EQ(runs[0].request.layout.attention, "flash");
    EXPECT_EQ(runs[0].request.layout.attention_backend, backend);
  }
}

api::PlanRequest llama_8b_plan(const std::string& backend) {
  api::PlanRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 8192;
  r.training.global_batch = 64;
  r.ranking.top = 1;
  r.ranking.threads = 1;
  r.space.attention_backend = backend;
  return r;
}

// `plan --attention-backend`: every layout searched runs the kernel given, and the winner's estimate and its
// reproducing command say so. FlashAttention-2 is slower than cuDNN's attention on Hopper (above), so the best step
// is slower than auto's.
TEST(AttentionBackend, PlanSearchesWithTheGivenKernel) {
  const api::PlanResult automatic = api::run(llama_8b_plan("auto"));
  const api::PlanResult flash = api::run(llama_8b_plan("flash"));
  ASSERT_FALSE(automatic.plans.empty());
  ASSERT_FALSE(flash.plans.empty());
  const api::PlanReport& best = flash.plans.front();
  EXPECT_GT(best.time.step_s, automatic.plans.front().time.step_s);
  EXPECT_NE(best.command.find("--attention-backend flash"), std::string::npos) << best.command;
  EXPECT_EQ(automatic.plans.front().command.find("--attention-backend"), std::string::npos);
  // The winner, estimated on its own with the same kernel, takes the same step.
  api::EstimateRequest alone = llama_8b_on_one_h100_node("flash");
  alone.training.global_batch = 64;
  alone.training.micro_batch = best.layout.micro_batch;
  alone.layout.tp = best.layout.tp;
  alone.layout.pp = best.layout.pp;
  alone.layout.dp = best.layout.dp;
  alone.layout.zero = best.layout.zero;
  alone.layout.recompute = best.layout.recompute;
  alone.layout.sequence_parallel = best.layout.sequence_parallel;
  alone.timing.tp_overlap = best.layout.tp_overlap;
  EXPECT_NEAR(api::run(alone).time.step_s, best.time.step_s, 1e-9 * best.time.step_s);
  // PyTorch's modules pick their own kernels.
  api::PlanRequest titan = llama_8b_plan("flash");
  titan.training.framework = "torchtitan";
  try {
    api::run(titan);
    ADD_FAILURE() << "accepted flash with torchtitan";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "space.attention_backend");
  }
}

// `plan --from` searches the layout but keeps the file's kernels.
TEST(AttentionBackend, PlanKeepsTheLaunchFilesKernel) {
  const std::string script =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
      "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --untie-embeddings-and-output-weights --disable-bias-linear --vocab-size "
      "128256 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 64 --bf16 "
      "--attention-backend flash\n";
  const nlohmann::json request = {{"from", {{"path", "train.sh"}, {"text", script}}},
                                  {"system", "dgx-h100"}, {"nodes", 1}, {"top", 1}, {"threads", 1}};
  const nlohmann::ordered_json result = api::run_json(api::Question::plan, request);
  const std::string command = result.at("plans").at(0).at("command").get<std::string>();
  EXPECT_NE(command.find("--attention-backend flash"), std::string::npos) << command;
}

}  // namespace attention_backend_test
