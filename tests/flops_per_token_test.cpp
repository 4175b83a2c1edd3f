// FLOPs per token against closed forms derived by hand.
#include <gtest/gtest.h>

#include "gpuplan/error.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/model_io.hpp"

using namespace gpuplan;

TEST(FlopsPerToken, Gpt3MatchesNarayananClosedForm) {
  // Narayanan et al. (SC'21, eq. 3 without recomputation): one training iteration of batch B and sequence s takes
  //   F = 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  // Derivation: per layer and token the forward pass multiplies by qkv (3h^2), output (h^2) and MLP (8h^2)
  // weights, 2 FLOPs per multiply-add, so 24h^2; scores and context add 2sh each, so 4sh; the logits add 2Vh.
  // Backward is twice forward: per token 3 x (24 l h^2 + 4 l s h + 2 V h) = 72 l h^2 + 12 l s h + 6 V h,
  // which is F / (B s).
  const ModelConfig m = model_from_catalog("gpt3-175b");
  const double l = 96, h = 12288, V = 50257, s = 2048;
  const double per_iteration_per_token = 72 * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const FlopsPerToken f = flops_per_token(m, 2048);
  EXPECT_NEAR(f.training, per_iteration_per_token, per_iteration_per_token * 1e-12);
  EXPECT_NEAR(f.forward, per_iteration_per_token / 3, per_iteration_per_token * 1e-12);
  EXPECT_DOUBLE_EQ(f.attention_forward, 4 * l * s * h);
}

TEST(FlopsPerToken, SixNUsesNonEmbeddingParamsPlusOutputLayer) {
  // Llama-2-7B: 6,738,415,616 parameters (published) of which the token embedding is 32000 x 4096 =
  // 131,072,000; the untied output layer (also 131,072,000) stays in N.
  const FlopsPerToken f = flops_per_token(model_from_catalog("llama-2-7b"), 4096);
  EXPECT_DOUBLE_EQ(f.six_n, 6.0 * (6738415616.0 - 131072000.0));
}

TEST(FlopsPerToken, MoeCountsOnlyTheRoutedExpertsUsed) {
  // Mixtral-8x7B per layer: attention 4096 x (4096 + 2x1024 + 4096) = 41,943,040 weights, two experts of
  // 3 x 4096 x 14336 = 176,160,768 each, router 4096 x 8 = 32,768. Logits 32000 x 4096. At s = 4096 the
  // attention term per layer is 2 s heads head_dim x 2 = 4 x 4096 x 4096.
  const double layer = 41943040.0 + 2 * 176160768.0 + 32768.0;
  const double forward = 32 * 2 * layer + 2 * 32000.0 * 4096 + 32 * 4 * 4096.0 * 4096;
  const FlopsPerToken f = flops_per_token(model_from_catalog("mixtral-8x7b"), 4096);
  EXPECT_DOUBLE_EQ(f.forward, forward);
  EXPECT_DOUBLE_EQ(f.training, 3 * forward);
}

TEST(FlopsPerToken, MlaUsesItsOwnHeadWidths) {
  // DeepSeek-V3 scores use q/k heads of 128 + 64 channels and context uses v heads of 128: per layer
  // 2 s x 128 heads x 192 + 2 s x 128 x 128.
  const FlopsPerToken f = flops_per_token(model_from_catalog("deepseek-v3"), 1000);
  EXPECT_DOUBLE_EQ(f.attention_forward, 61 * (2 * 1000.0 * 128 * 192 + 2 * 1000.0 * 128 * 128));
}

TEST(FlopsPerToken, RejectsNonPositiveSequenceLength) {
  EXPECT_THROW(flops_per_token(model_from_catalog("gpt2"), 0), InputError);
}
