// What `estimate` assumes when the user leaves something out: data parallelism fills the nodes it is given, as a
// launcher started on every GPU of those nodes would.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

namespace api = gpuplan::api;

namespace {

api::EstimateRequest job(const std::string& model, std::int64_t nodes, std::int64_t tp, std::int64_t pp) {
  api::EstimateRequest r;
  r.model.name_or_path = model;
  r.cluster.system = "dgx-h100";
  if (nodes > 0) r.cluster.nodes = nodes;
  r.layout.tp = tp;
  r.layout.pp = pp;
  return r;
}

}  // namespace

TEST(EstimateDefaults, DataParallelismFillsTheNodesGiven) {
  // The README's example: 8 DGX H100 nodes of 8 GPUs, tp 8 x pp 4 = 32 GPUs per replica, so 2 replicas.
  const api::EstimateResult r = api::run(job("llama-3.1-70b", 8, 8, 4));
  EXPECT_EQ(r.memory.layout.gpus, 64);
  EXPECT_EQ(r.memory.layout.dp, 2);
  EXPECT_EQ(r.cluster.nodes, 8);
  EXPECT_TRUE(r.memory.warnings.empty());
}

TEST(EstimateDefaults, ExpertParallelismOverTheFilledReplicas) {
  // DeepSeek-V3 (61 layers: one dense stage first, as Megatron's --decoder-first-pipeline-num-layers allows)
  // on 256 nodes at pp 16: dp = 2048 / 16 = 128 ranks per stage, which ep 64 divides.
  api::EstimateRequest r = job("deepseek-v3", 256, 1, 16);
  r.layout.ep = 64;
  r.layout.first_stage_layers = 1;
  const api::EstimateResult result = api::run(r);
  EXPECT_EQ(result.memory.layout.gpus, 2048);
  EXPECT_EQ(result.memory.layout.dp, 128);
  EXPECT_EQ(result.memory.layout.ep, 64);
}

TEST(EstimateDefaults, WithoutNodesTheGroupsNodesAreFilled) {
  // tp 2 alone on a DGX H100 system: one node, four replicas.
  const api::EstimateResult r = api::run(job("llama-3.1-8b", 0, 2, 1));
  EXPECT_EQ(r.memory.layout.gpus, 8);
  EXPECT_EQ(r.memory.layout.dp, 4);
}

TEST(EstimateDefaults, AGivenDpOrGpuCountIsKept) {
  api::EstimateRequest with_dp = job("llama-3.1-8b", 2, 2, 1);
  with_dp.layout.dp = 1;
  EXPECT_EQ(api::run(with_dp).memory.layout.gpus, 2);
  api::EstimateRequest with_gpus = job("llama-3.1-8b", 2, 2, 1);
  with_gpus.layout.gpus = 4;
  EXPECT_EQ(api::run(with_gpus).memory.layout.dp, 2);
}

TEST(EstimateDefaults, AGroupThatDoesNotDivideTheNodesIsSaid) {
  // tp 2 x pp 3 = 6 GPUs per replica on one node of 8: one replica, two GPUs idle, and a warning that says so.
  api::EstimateRequest r = job("llama-3.1-8b", 1, 2, 3);
  r.layout.first_stage_layers = 10;  // 32 layers: 10 + 11 + 11
  const api::EstimateResult result = api::run(r);
  EXPECT_EQ(result.memory.layout.gpus, 6);
  ASSERT_EQ(result.memory.warnings.size(), 1U);
  EXPECT_NE(result.memory.warnings[0].find("6 of the cluster's 8 GPUs"), std::string::npos);
}

TEST(EstimateDefaults, AGlobalBatchTooSmallForTheFilledNodesSaysWhy) {
  api::EstimateRequest r = job("llama-3.1-8b", 2, 1, 1);
  r.training.global_batch = 4;
  try {
    api::run(r);
    FAIL() << "a global batch of 4 over 16 replicas was accepted";
  } catch (const gpuplan::InputError& e) {
    EXPECT_EQ(e.field(), "training.global_batch");
    EXPECT_NE(e.accepted().find("fills the cluster's 16 GPUs"), std::string::npos) << e.what();
  }
}

TEST(EstimateDefaults, ATensorParallelismThatDoesNotDivideTheHeadsIsNamedBeforeTheBatch) {
  // llama-3.1-70b has 64 attention heads; TP 3 x PP 4 on 64 GPUs fills 5 replicas, which 512 sequences do not
  // divide. The layout the user asked for is at fault first: TP 3 divides neither 64 heads nor 8 query groups.
  api::EstimateRequest r = job("llama-3.1-70b", 8, 3, 4);
  r.training.global_batch = 512;
  try {
    api::run(r);
    FAIL() << "TP 3 was accepted for 64 heads";
  } catch (const gpuplan::InputError& e) {
    EXPECT_EQ(e.field(), "layout.tp") << e.what();
  }
}
