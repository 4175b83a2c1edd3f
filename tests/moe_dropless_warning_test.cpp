// The warning on dropless MoE under Megatron-Core: its token dispatcher brings each MoE layer's tokens per expert to
// the host (megatron/core/transformer/moe/token_dispatcher.py: the all-to-all's input and output splits, and
// Transformer Engine's GroupedLinear m_splits, are host lists), which the step model does not price. The warning
// stands on a published measurement: Megatron-Bridge's 25.11 performance summary (docs/performance-summary.md,
// DGX-B200), Qwen3-30B-A3B on 8 B200 at FP8-MX, global batch 512, micro-batch 1, sequence 4096, EP 8, dropless:
// 9,299 tokens/s per GPU.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"

using namespace gpuplan;

namespace moe_dropless_warning_test {

api::EstimateRequest qwen3_on_b200() {
  api::EstimateRequest r;
  r.model.name_or_path = "qwen3-30b-a3b";
  r.cluster.system = "dgx-b200";
  r.cluster.nodes = 1;
  r.training.seq_len = 4096;
  r.training.global_batch = 512;
  r.training.precision = "fp8";
  r.layout.ep = 8;
  r.layout.zero = 1;
  return r;
}

bool warns_dropless(const api::EstimateResult& e) {
  for (const std::string& w : e.throughput.warnings)
    if (w.find("dropless MoE") != std::string::npos) return true;
  return false;
}

TEST(MoeDroplessWarning, ThePublishedRunIsSlowerThanPredictedAndWarned) {
  const api::EstimateResult e = api::run(qwen3_on_b200());
  // The gap the warning states: the run took at least 1.2x the predicted time.
  EXPECT_GT(e.throughput.tokens_per_s_per_gpu, 1.2 * 9299);
  EXPECT_TRUE(warns_dropless(e));
  api::EstimateRequest nemo = qwen3_on_b200();
  nemo.training.framework = "nemo";
  EXPECT_TRUE(warns_dropless(api::run(nemo)));
}

// Dropping tokens without padding still synchronizes (token_dispatcher.py: "Token drop but no pad. A
// synchronization is needed before the first permutation"); padding every expert to its capacity does not, and a
// dense model routes nothing.
TEST(MoeDroplessWarning, WarnedUnlessPaddedToCapacity) {
  auto warns = [](const api::EstimateResult& e, const std::string& kind) {
    for (const std::string& w : e.throughput.warnings)
      if (w.find(kind + " under Megatron-Core: the host synchronizes") != std::string::npos) return true;
    return false;
  };
  api::EstimateRequest capped = qwen3_on_b200();
  capped.training.moe_capacity_factor = 1.0;
  EXPECT_TRUE(warns(api::run(capped), "MoE dropping tokens without padding"));
  capped.training.moe_pad_to_capacity = true;
  EXPECT_FALSE(warns_dropless(api::run(capped)));
  EXPECT_FALSE(warns(api::run(capped), "MoE dropping tokens without padding"));
  api::EstimateRequest dense = qwen3_on_b200();
  dense.model.name_or_path = "qwen3-8b";
  dense.layout.ep = 1;
  EXPECT_FALSE(warns_dropless(api::run(dense)));
}

}  // namespace moe_dropless_warning_test
