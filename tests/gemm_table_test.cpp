// GEMM time from measured efficiencies by shape: data/gemm/b200-bf16.json holds SimuMax's B200 measurements
// (MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json). The values below are read from that source file.
#include <gtest/gtest.h>

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
