// Compute efficiencies by GPU: measured where a measurement exists, borrowed (and said so) from the same chip in
// another system, and said to be assumed where only the defaults' A100 flash-attention figure (FlashAttention-2,
// arXiv 2307.08691) stands in for another architecture.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "perf/gemm_table.hpp"

namespace api = gpuplan::api;

namespace {

std::string attention_source(const std::string& system, std::int64_t gpus) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = system;
  r.cluster.nodes = 1;
  r.layout.gpus = gpus;
  r.training.global_batch = gpus;
  return api::run(r).cluster.attention_efficiency_source;
}

}  // namespace

TEST(AttentionEfficiency, Mi300xRunsFlashAttentionAtItsMeasuredRate) {
  // Azure AI-benchmarking-guide, ND MI300X v5: Flash Attention 2.0 forward + backward at batch 2 and 8192 tokens,
  // 328.6 TFLOP/s of the MI300X's 1307.4 dense bf16 peak. flash-attention's benchmark counts the backward as 2.5x
  // the forward's FLOPs, as the model times it, so the figure is the modelled forward efficiency at 8192 keys.
  const gpuplan::GpuSpec& gpu = gpuplan::HardwareCatalog::builtin().gpu("mi300x");
  const gpuplan::PerfConstants c = gpuplan::perf_constants(gpu);
  const double keys = 8192;
  const double modelled = c.flash_attention_efficiency * keys / (keys + c.flash_attention_half_length);
  EXPECT_NEAR(modelled, 328.6 / 1307.4, 0.01 * 328.6 / 1307.4);
}

TEST(AttentionEfficiency, EstimatesSayWhereTheAttentionRateComesFrom) {
  EXPECT_NE(attention_source("mi300x-8x", 8).find("architectures.cdna3"), std::string::npos);
  EXPECT_NE(attention_source("mi300x-8x", 8).find("Azure"), std::string::npos);
  EXPECT_NE(attention_source("dgx-b200", 8).find("SimuMax"), std::string::npos);  // the measured kernel calls
  EXPECT_NE(attention_source("dgx-h100", 8).find("architectures.hopper"), std::string::npos);
  EXPECT_NE(attention_source("dgx-a100", 8).find("defaults."), std::string::npos);  // measured on A100 itself
  EXPECT_EQ(attention_source("dgx-a100", 8).rfind("assumed", 0), std::string::npos);
  EXPECT_NE(attention_source("gb200-nvl72", 8).find("gpus.gb200"), std::string::npos);  // the B200's, said so
  // The L40S (Ada) has no attention measurement: the A100 figure is an assumption, and said to be one.
  EXPECT_EQ(attention_source("pcie-8x-l40s", 8).rfind("assumed", 0), 0U);
}

TEST(AttentionEfficiency, Gb200TakesTheB200sMeasuredFlashAttention) {
  // SimuMax's B200 measurements of Transformer Engine's causal flash attention at 4096 keys and head dim 128
  // (data/gemm/b200-bf16.json, full s x s FLOPs): 32 heads forward 0.7318, backward 0.7963; 64 heads 0.8715,
  // 0.7294. Halved to causal FLOPs, one efficiency whose backward takes 2.5x the forward's time is
  // 3.5 / (1 / forward + 2.5 / backward); GB200 should run 4096 keys at about the mean of the two.
  auto blended = [](double forward, double backward) { return 3.5 / (2 / forward + 2.5 * 2 / backward); };
  const double measured = (blended(0.7318, 0.7963) + blended(0.8715, 0.7294)) / 2;
  const gpuplan::PerfConstants c = gpuplan::perf_constants(gpuplan::HardwareCatalog::builtin().gpu("gb200"));
  const double keys = 4096;
  EXPECT_NEAR(c.flash_attention_efficiency * keys / (keys + c.flash_attention_half_length), measured, 0.02 * measured);
}

TEST(GemmEfficiency, Gb200GemmsRunAtTheB200sMeasuredLevel) {
  // The same borrowing for the linear layers: GB200's GPU is the B200's, whose measured GEMMs with every dimension
  // at least 8192 (SimuMax, data/gemm/b200-bf16.json) run at a median of their three passes' efficiencies, not
  // at Hopper's assumed 0.70.
  const auto table = gpuplan::perf::builtin_gemm_table("b200");
  ASSERT_NE(table, nullptr);
  std::vector<double> large;
  for (const auto& e : table->dense)
    if (std::min({e.rows, e.outputs, e.inputs}) >= 8192) large.insert(large.end(), {e.forward, e.dgrad, e.wgrad});
  ASSERT_FALSE(large.empty());
  std::nth_element(large.begin(), large.begin() + static_cast<std::ptrdiff_t>(large.size() / 2), large.end());
  const double median = large[large.size() / 2];
  const gpuplan::PerfConstants c = gpuplan::perf_constants(gpuplan::HardwareCatalog::builtin().gpu("gb200"));
  EXPECT_NEAR(c.gemm_max_efficiency, median, 0.01);
  // and says where the figure comes from, where the H100's arch-wide 0.70 is an assumption
  EXPECT_NE(c.gemm_efficiency_source().find("gpus.gb200"), std::string::npos) << c.gemm_efficiency_source();
  const gpuplan::PerfConstants h100 =
      gpuplan::perf_constants(gpuplan::HardwareCatalog::builtin().gpu("h100-sxm-80gb"));
  EXPECT_EQ(h100.gemm_efficiency_source().rfind("assumed", 0), 0U);
}
