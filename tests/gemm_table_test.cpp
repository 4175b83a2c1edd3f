// GEMM time from measured efficiencies by shape: data/gemm/b200-bf16.json holds SimuMax's B200 measurements
// (MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json), data/gemm/a100-pcie-80gb-bf16.json its A100 PCIe
// measurements (configs/system/a100_pcie.json, copied to tests/data/measured/a100-pcie-simumax-gemm.json). The
// values below are read from those source files.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gpuplan/api.hpp"
#include "perf/gemm_table.hpp"

namespace api = gpuplan::api;
namespace perf = gpuplan::perf;

TEST(GemmTable, MeasuredShapesAreExact) {
  const auto table = perf::builtin_gemm_table("b200");
  ASSERT_NE(table, nullptr);
  // Llama-3-70B's fused QKV at TP 1 over 4096 tokens: 8192 inputs, 10240 outputs. SimuMax: forward (TN)
  // 0.6451614, input gradient (NN, m=4096 k=10240 n=8192) 0.4980446, weight gradient (NT into fp32, m=10240
  // k=4096 n=8192) 0.5979462, kept to four decimals.
  const perf::GemmEfficiencies qkv = perf::lookup(*table, false, 4096, 10240, 8192);
  EXPECT_DOUBLE_EQ(qkv.forward, 0.6452);
  EXPECT_DOUBLE_EQ(qkv.dgrad, 0.4980);
  EXPECT_DOUBLE_EQ(qkv.wgrad, 0.5979);
  EXPECT_EQ(perf::builtin_gemm_table("h100-sxm-80gb"), nullptr);
}

// DeepSeek-V2's expert up projection on 20 experts of one rank (EP 8): 1232 tokens per expert, 5120 inputs, 3072
// outputs. The source times each stage twice, once per main_grad dtype. The weight gradient is the fp32 one,
// which Megatron-LM accumulates into (0.3276001, against 0.3849 into bf16); the forward (0.5134, 0.4502) and the
// input gradient (0.4215, 0.3896), which never touch the main_grad, are the means of the two timings.
TEST(GemmTable, GroupedWeightGradientIsIntoTheFp32MainGrad) {
  const auto table = perf::builtin_gemm_table("b200");
  ASSERT_NE(table, nullptr);
  const perf::GemmEfficiencies up = perf::lookup(*table, true, 1232, 3072, 5120);
  EXPECT_NEAR(up.forward, (0.5134 + 0.4502) / 2, 2e-4);
  EXPECT_NEAR(up.dgrad, (0.4215 + 0.3896) / 2, 2e-4);
  EXPECT_NEAR(up.wgrad, 0.3276, 1e-4);
}

TEST(GemmTable, BetweenShapesStaysAmongTheNeighbours) {
  const auto table = perf::builtin_gemm_table("b200");
  ASSERT_NE(table, nullptr);
  double lowest = 1, highest = 0;
  for (const auto& e : table->dense) {
    lowest = std::min({lowest, e.forward, e.dgrad, e.wgrad});
    highest = std::max({highest, e.forward, e.dgrad, e.wgrad});
  }
  EXPECT_DOUBLE_EQ(highest, table->best);
  for (double rows : {1000.0, 3000.0, 6000.0, 20000.0}) {
    const perf::GemmEfficiencies e = perf::lookup(*table, false, rows, 12000, 7000);
    for (double value : {e.forward, e.dgrad, e.wgrad}) {
      EXPECT_GE(value, lowest);
      EXPECT_LE(value, highest);
    }
  }
}

TEST(GemmTable, EstimatesSayWhereTheirEfficiencyComesFrom) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-b200";
  r.cluster.nodes = 1;
  r.training.global_batch = 8;
  const api::EstimateResult b200 = api::run(r);
  EXPECT_NE(b200.cluster.gemm_efficiency_source.find("SimuMax"), std::string::npos);
  r.cluster.system = "dgx-h100";
  EXPECT_EQ(api::run(r).cluster.gemm_efficiency_source.rfind("assumed", 0), 0U);
}

TEST(GemmTable, A100PcieMeasuredShapesAreExact) {
  const auto table = perf::builtin_gemm_table("a100-pcie-80gb");
  ASSERT_NE(table, nullptr);
  // Llama-3-70B's fused QKV at TP 1 over 4096 tokens (8192 inputs, 10240 outputs), SimuMax a100_pcie.json:
  // forward (TN, m=4096 k=8192 n=10240) 0.7553994944831973, input gradient (NN, m=4096 k=10240 n=8192)
  // 0.754386202244146, weight gradient (NT into fp32, m=10240 k=4096 n=8192) 0.704074572780017.
  const perf::GemmEfficiencies qkv = perf::lookup(*table, false, 4096, 10240, 8192);
  EXPECT_DOUBLE_EQ(qkv.forward, 0.7554);
  EXPECT_DOUBLE_EQ(qkv.dgrad, 0.7544);
  EXPECT_DOUBLE_EQ(qkv.wgrad, 0.7041);
  // Grouped: 20 experts of 1232 rows, 5120 inputs, 3072 outputs: fwd 0.7073733774506031, bwd_grad_act
  // 0.703850799964959, bwd_grad_w 0.6036380796120573.
  const perf::GemmEfficiencies experts = perf::lookup(*table, true, 1232, 3072, 5120);
  EXPECT_DOUBLE_EQ(experts.forward, 0.7074);
  EXPECT_DOUBLE_EQ(experts.dgrad, 0.7039);
  EXPECT_DOUBLE_EQ(experts.wgrad, 0.6036);
}

namespace {

// "b=1, m=4096, k=8192, ..." -> {"b": "1", "m": "4096", ...}
std::map<std::string, std::string> key_fields(const std::string& key) {
  std::map<std::string, std::string> out;
  std::stringstream in(key);
  for (std::string part; std::getline(in, part, ',');) {
    const auto start = part.find_first_not_of(' ');
    const auto eq = part.find('=');
    out[part.substr(start, eq - start)] = part.substr(eq + 1);
  }
  return out;
}

double rounded(double x) { return std::round(x * 1e4) / 1e4; }

nlohmann::json a100_pcie_source() {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/measured/a100-pcie-simumax-gemm.json");
  return nlohmann::json::parse(in);
}

}  // namespace

// Every forward GEMM SimuMax measured on the A100 PCIe is in the table at its linear-layer shape, with the input-
// and weight-gradient GEMMs of the same layer. TE's general_gemm layouts (SimuMax test_gemm_efficency.py): TN
// m tokens, k inputs, n outputs; NN m tokens, k outputs, n inputs; NT (into fp32) m outputs, k tokens, n inputs.
TEST(GemmTable, A100PcieTableHoldsEverySourceShape) {
  const auto table = perf::builtin_gemm_table("a100-pcie-80gb");
  ASSERT_NE(table, nullptr);
  const auto measured = a100_pcie_source().at("accelerator").at("op").at("matmul").at("accurate_efficient_factor");
  std::map<std::string, double> by_key;
  for (const auto& [key, value] : measured.items()) by_key[key] = value.get<double>();
  int forwards = 0;
  for (const auto& [key, forward] : by_key) {
    auto f = key_fields(key);
    if (f.at("layout") != "TN") continue;
    const std::string m = f.at("m"), k = f.at("k"), n = f.at("n");
    const std::string dgrad = "b=1, m=" + m + ", k=" + n + ", n=" + k + ", layout=NN, accumulate=False, out_dtype=bf16";
    const std::string wgrad = "b=1, m=" + n + ", k=" + m + ", n=" + k + ", layout=NT, accumulate=True, out_dtype=fp32";
    ASSERT_TRUE(by_key.count(dgrad) && by_key.count(wgrad)) << key;
    const perf::GemmEfficiencies e = perf::lookup(*table, false, std::stod(m), std::stod(n), std::stod(k));
    EXPECT_NEAR(e.forward, rounded(forward), 1e-9) << key;
    EXPECT_NEAR(e.dgrad, rounded(by_key.at(dgrad)), 1e-9) << key;
    EXPECT_NEAR(e.wgrad, rounded(by_key.at(wgrad)), 1e-9) << key;
    ++forwards;
  }
  EXPECT_EQ(forwards, 61);
  EXPECT_EQ(table->dense.size(), 61U);
}

// The grouped entries: per expert, the forward, input-gradient and weight-gradient stages of each (M, N, K).
TEST(GemmTable, A100PcieGroupedEntriesMatchTheSource) {
  const auto table = perf::builtin_gemm_table("a100-pcie-80gb");
  ASSERT_NE(table, nullptr);
  const auto measured =
      a100_pcie_source().at("accelerator").at("op").at("group_matmul").at("accurate_efficient_factor");
  int checked = 0;
  for (const auto& [key, value] : measured.items()) {
    auto f = key_fields(key);
    const perf::GemmEfficiencies e =
        perf::lookup(*table, true, std::stod(f.at("M")), std::stod(f.at("N")), std::stod(f.at("K")));
    const std::string& stage = f.at("stage");
    const double got = stage == "fwd" ? e.forward : stage == "bwd_grad_act" ? e.dgrad : e.wgrad;
    EXPECT_NEAR(got, rounded(value.get<double>()), 1e-9) << key;
    ++checked;
  }
  EXPECT_EQ(checked, 12);
  EXPECT_EQ(table->grouped.size(), 4U);
}

// No public per-shape measurement of these GPUs was found: their GEMMs stay on the assumed efficiency, and the
// A100 PCIe table is not lent to the SXM part (same peak, 400 W instead of 300 W, faster HBM).
TEST(GemmTable, GpusWithoutAMeasuredTableStayAssumed) {
  for (const char* gpu : {"a100-sxm-80gb", "a100-sxm-40gb", "h100-sxm-80gb", "h800-sxm-80gb", "h200-141gb", "mi300x"})
    EXPECT_EQ(perf::builtin_gemm_table(gpu), nullptr) << gpu;
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "pcie-8x-a100-80gb";
  r.cluster.nodes = 1;
  r.training.global_batch = 8;
  EXPECT_NE(api::run(r).cluster.gemm_efficiency_source.find("a100_pcie.json"), std::string::npos);
  r.cluster.system = "dgx-a100";
  EXPECT_EQ(api::run(r).cluster.gemm_efficiency_source.rfind("assumed", 0), 0U);
  r.cluster.system = "mi300x-8x";
  EXPECT_EQ(api::run(r).cluster.gemm_efficiency_source.rfind("assumed", 0), 0U);
}
