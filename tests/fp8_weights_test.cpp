// The layers' Linear weights under Transformer Engine's fp8 (Megatron-LM, NeMo): the fp8 copies TE keeps across
// microbatches, Megatron-LM's --fp8-param-gather that makes them the parameters, and its fp8 all-gather. Sources:
// Transformer Engine 2.x pytorch/module/base.py (get_weight_workspace caches the quantized weight under a cache
// name while Megatron-Core's TELinear passes is_first_microbatch), tensor/float8_tensor.py (a transposed copy where
// is_non_tn_fp8_gemm_supported() is false: Hopper), pytorch/utils.py (true for compute capability 10.x).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

// Llama 3.1 8B's Linear weights, by hand: 32 layers of q, k, v (4096 x (4096 + 2 x 1024)), o (4096 x 4096) and
// gate, up, down (3 x 4096 x 14336).
constexpr double kLlama8bLinear = 32.0 * (4096.0 * 6144 + 4096.0 * 4096 + 3.0 * 4096 * 14336);
const std::string kJob = "memory --model llama-3.1-8b --gpus 8 --zero 1 --json ";

double weights_bytes(const std::string& extra, const std::string& job = kJob) {
  const auto r = run_cli(job + extra);
  EXPECT_EQ(r.status, 0) << extra << "\n" << r.err;
  if (r.status != 0) return 0;
  return nlohmann::json::parse(r.out).at("per_gpu").at("weights").get<double>();
}

nlohmann::json fp8_estimate(const std::string& extra) {
  const auto r = run_cli("estimate --model llama-3.1-8b --precision fp8 --system dgx-h100 --nodes 2 --zero 1 "
                         "--grad-dtype bf16 --no-dp-overlap --no-grad-nan-check --json " + extra);
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

}  // namespace

TEST(Fp8Weights, TransformerEngineKeepsAnFp8CopyOfEachLayerLinear) {
  ASSERT_DOUBLE_EQ(kLlama8bLinear, 6'979'321'856.0);
  const double bf16 = weights_bytes("--gpu h100-sxm-80gb");
  // Hopper's fp8 GEMMs take only TN: the copy and its transpose, two bytes per weight.
  EXPECT_DOUBLE_EQ(weights_bytes("--gpu h100-sxm-80gb --precision fp8") - bf16, 2 * kLlama8bLinear);
  // A B200 (compute capability 10.0) takes any layout: one byte.
  EXPECT_DOUBLE_EQ(weights_bytes("--gpu b200 --precision fp8") - bf16, kLlama8bLinear);
  // torchao's float8 Linears cast on every call and keep nothing (torchtitan).
  const std::string titan = "memory --model llama-3.1-8b --gpus 8 --framework torchtitan --json ";
  EXPECT_DOUBLE_EQ(weights_bytes("--gpu h100-sxm-80gb --precision fp8", titan), weights_bytes("--gpu h100-sxm-80gb", titan));
}

TEST(Fp8Weights, ParamGatherMakesTheFp8TensorsTheParameters) {
  const double bf16 = weights_bytes("--gpu h100-sxm-80gb");
  // No 16-bit copy of the Linear weights: one byte each, and on Hopper one more for the transpose.
  EXPECT_DOUBLE_EQ(weights_bytes("--gpu h100-sxm-80gb --precision fp8 --fp8-param-gather"), bf16);
  EXPECT_DOUBLE_EQ(weights_bytes("--gpu b200 --precision fp8 --fp8-param-gather"), bf16 - kLlama8bLinear);
  const auto r = run_cli(kJob + "--precision fp8 --fp8-param-gather");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out).at("training").at("fp8_param_gather").get<bool>());
}

// The distributed optimizer reduce-scatters 16-bit gradients (--grad-dtype bf16) and all-gathers the parameters:
// equal bytes, so equal times. Gathered in fp8, the Linear weights (a share f of the parameters) take one byte
// instead of two: the pair takes (1 + (1 - f / 2)) / 2 of its time.
TEST(Fp8Weights, ParamGatherHalvesTheLinearWeightsAllGather) {
  const double f = kLlama8bLinear / 8'030'261'248.0;  // Llama 3.1 8B's parameters (its config's exact count)
  const double plain = fp8_estimate("").at("time").at("breakdown").at("dp_comm").get<double>();
  const double gathered =
      fp8_estimate("--fp8-param-gather").at("time").at("breakdown").at("dp_comm").get<double>();
  EXPECT_NEAR(gathered / plain, (1 + (1 - f / 2)) / 2, 0.01);
}

TEST(Fp8Weights, ParamGatherNeedsFp8TheDistributedOptimizerAndMegatron) {
  auto expect_error = [](const std::string& args, const std::string& says) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err.find("gpuplan: error: --fp8-param-gather:"), 0u) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  };
  expect_error("memory --model llama-3.1-8b --gpus 8 --zero 1 --fp8-param-gather", "with precision bf16");
  // megatron/training/arguments.py asserts the distributed optimizer (or FSDP) for it.
  expect_error("memory --model llama-3.1-8b --gpus 8 --precision fp8 --fp8-param-gather", "with zero 0");
  expect_error("memory --model llama-3.1-8b --gpus 8 --zero 1 --precision fp8 --fp8-param-gather --framework "
               "deepspeed", "under framework deepspeed");
}

TEST(Fp8Weights, LaunchFilesCarryParamGather) {
  // NVIDIA's Llama 3 8B FP8 script sets --fp8-param-gather.
  const std::string script = std::string(GPUPLAN_TEST_DATA_DIR) + "/frameworks/megatron/train_llama3_8b_h100_fp8.sh";
  const auto read = run_cli("memory --from " + script + " --system dgx-h100 --json");
  ASSERT_EQ(read.status, 0) << read.err;
  EXPECT_TRUE(nlohmann::json::parse(read.out).at("training").at("fp8_param_gather").get<bool>());
  // The same script in bf16: the file's --fp8-param-gather is refused under bf16 until it is turned off beside it.
  const auto bf16 = run_cli("memory --from " + script + " --system dgx-h100 --precision bf16");
  EXPECT_EQ(bf16.status, 2) << bf16.err;
  EXPECT_NE(bf16.err.find("--no-fp8-param-gather"), std::string::npos) << bf16.err;
  const auto off = run_cli("memory --from " + script + " --system dgx-h100 --precision bf16 --no-fp8-param-gather --json");
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_FALSE(nlohmann::json::parse(off.out).at("training").at("fp8_param_gather").get<bool>());
  // What --emit writes, each framework's way, reads back the same.
  const std::string job = "estimate --model llama-3.1-8b --precision fp8 --fp8-param-gather --system dgx-h100 "
                          "--nodes 1 --zero 1 ";
  const auto dir = std::filesystem::temp_directory_path() / "gpuplan_fp8_param_gather_emit";
  std::filesystem::remove_all(dir);
  for (const std::string framework : {"megatron", "nemo"}) {
    const auto emitted = run_cli(job + "--framework " + framework + " --emit " + framework + " --out " + dir.string());
    ASSERT_EQ(emitted.status, 0) << emitted.err;
    const auto back = run_cli("memory --from " + (dir / ("train_" + framework + ".sh")).string() + " --json");
    ASSERT_EQ(back.status, 0) << back.err;
    EXPECT_TRUE(nlohmann::json::parse(back.out).at("training").at("fp8_param_gather").get<bool>()) << framework;
  }
  std::filesystem::remove_all(dir);
}

TEST(Fp8Weights, ParamGatherIsSuggestedWhereTheCopyDoesNotFit) {
  const auto r = run_cli(kJob + "--precision fp8 --seq-len 8192 --gpu-memory 100GB");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double total = j.at("per_gpu").at("total").get<double>();
  bool listed = false;
  for (const auto& s : j.at("suggestions")) {
    if (s.at("change") != "--fp8-param-gather") continue;
    listed = true;
    // At least the fp8 copies and their transposes go (the allocator's reserve shrinks with them).
    EXPECT_LE(s.at("new_total").get<double>(), total - 2 * kLlama8bLinear);
  }
  EXPECT_TRUE(listed) << j.at("suggestions").dump();
}

// TE's GroupedLinear quantizes the experts' inputs under fp8 (split_quantize) and keeps those for the weight
// gradient, as Linear does. Mixtral 8x7B at 4096 tokens, EP 8: each rank's experts take 4096 x top-2 = 8192 rows;
// over its 32 layers the fc1 inputs are 8192 x 4096 and the down-projection inputs 8192 x 14336, one byte each.
TEST(Fp8Weights, ExpertsKeepTheirQuantizedInputs) {
  const auto r = run_cli("memory --model mixtral-8x7b --precision fp8 --gpus 8 --ep 8 --zero 1 --seq-len 4096 "
                         "--explain --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  double fc1 = 0, down = 0;
  for (const auto& t : j.at("per_gpu").at("terms")) {
    if (t.at("name") == "dispatched tokens (expert fc1 input)") fc1 = t.at("bytes").get<double>();
    if (t.at("name") == "expert down-projection input") down = t.at("bytes").get<double>();
  }
  EXPECT_DOUBLE_EQ(fc1, 32.0 * 8192 * 4096);
  EXPECT_DOUBLE_EQ(down, 32.0 * 8192 * 14336);
}
