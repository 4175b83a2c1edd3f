// Built-in catalog entries against the parameter counts their publishers give.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/error.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace {

using gpuplan::test::significant;

std::int64_t catalog_total(const char* name) { return count_params(model_from_catalog(name)).total; }

}  // namespace

TEST(ModelCatalog, ExactPublishedCounts) {
  // keras-team/keras-hub presets (metadata.params) and the Hugging Face API (safetensors.total).
  EXPECT_EQ(catalog_total("gpt2"), 124439808);
  EXPECT_EQ(catalog_total("gpt2-medium"), 354823168);
  EXPECT_EQ(catalog_total("gpt2-large"), 774030080);
  EXPECT_EQ(catalog_total("gpt2-xl"), 1557611200);
  EXPECT_EQ(catalog_total("llama-2-7b"), 6738415616);     // together-python model_param_count, keras llama2_7b_en
  EXPECT_EQ(catalog_total("llama-2-13b"), 13015864320);   // DeepSpeed checkpoint log "13015864320 elements", public parameter tables
  EXPECT_EQ(catalog_total("llama-2-70b"), 68976648192);   // together-python model_param_count
  EXPECT_EQ(catalog_total("llama-3.1-8b"), 8030261248);   // HF API safetensors.total; keras llama3_8b_en
  EXPECT_EQ(catalog_total("llama-3.1-70b"), 70553706496);
  EXPECT_EQ(catalog_total("llama-3.1-405b"), 405853388800);
  EXPECT_EQ(catalog_total("mixtral-8x7b"), 46702792704);  // keras mixtral_8_7b_en
  EXPECT_EQ(catalog_total("qwen3-0.6b"), 596049920);      // keras qwen3_0.6b_en
  EXPECT_EQ(catalog_total("qwen3-8b"), 8190735360);       // keras qwen3_8b_en
  EXPECT_EQ(catalog_total("qwen3-32b"), 32762123264);     // keras qwen3_32b_en
  EXPECT_EQ(catalog_total("qwen3-30b-a3b"), 30532122624); // keras qwen3_moe_30b_a3b_en
}

TEST(ModelCatalog, RoundedPublishedCounts) {
  // Figures published only to three significant digits.
  EXPECT_EQ(significant(static_cast<double>(catalog_total("gpt3-175b")), 3), 175e9);        // Brown et al. Table 2.1
  EXPECT_EQ(significant(static_cast<double>(catalog_total("mixtral-8x22b")), 3), 141e9);    // Mistral AI: 141B total
  EXPECT_EQ(significant(static_cast<double>(catalog_total("qwen3-235b-a22b")), 3), 235e9);  // Qwen3 card: 235B total
  EXPECT_EQ(significant(static_cast<double>(catalog_total("deepseek-v3")), 3), 671e9);      // DeepSeek-V3 README: 671B
  // Active parameters: Mixtral-8x22B 39B, Qwen3-235B-A22B 22B, DeepSeek-V3 37B (two significant digits).
  EXPECT_EQ(significant(static_cast<double>(count_params(model_from_catalog("mixtral-8x22b")).active), 2), 39e9);
  EXPECT_EQ(significant(static_cast<double>(count_params(model_from_catalog("qwen3-235b-a22b")).active), 2), 22e9);
  EXPECT_EQ(significant(static_cast<double>(count_params(model_from_catalog("deepseek-v3")).active), 2), 38e9);
}

TEST(ModelCatalog, DeepSeekV3MatchesTheMainModelFormula) {
  // truth.json's formula note for the 61-layer main model (no MTP layer): 671,026,419,200. Derived here:
  //   embedding = lm_head = 129280 x 7168 = 926,679,040
  //   MLA attention = q_a 7168x1536 + q_b 1536x(128x192) + kv_a 7168x(512+64) + kv_b 512x(128x256) + o (128x128)x7168
  //                 = 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 + 117,440,512 = 187,105,280
  //   norms per layer = 2x7168 + 1536 + 512 = 16,384
  //   dense layer MLP = 3 x 7168 x 18432 = 396,361,728
  //   MoE layer = 256 routed + 1 shared expert of 3x7168x2048 (44,040,192 each) + router 256x7168 + bias 256
  //             = 11,274,289,152 + 44,040,192 + 1,835,264 = 11,320,164,608
  const std::int64_t attention = 187105280, norms = 16384;
  const std::int64_t dense = attention + norms + 396361728;
  const std::int64_t moe = attention + norms + 11320164608;
  const std::int64_t expected = 2 * 926679040LL + 3 * dense + 58 * moe + 7168;
  EXPECT_EQ(expected, 671026419200);
  EXPECT_EQ(catalog_total("deepseek-v3"), expected);
}

TEST(ModelCatalog, MegatronScalingTableToItsPrecision) {
  // Narayanan et al. SC'21 Table 1 gives parameters in billions to one decimal place.
  const std::pair<const char*, double> table[] = {
      {"megatron-gpt-1.7b", 1.7},   {"megatron-gpt-3.6b", 3.6},   {"megatron-gpt-7.5b", 7.5},
      {"megatron-gpt-18b", 18.4},   {"megatron-gpt-39b", 39.1},   {"megatron-gpt-76b", 76.1},
      {"megatron-gpt-145b", 145.6}, {"megatron-gpt-310b", 310.1}, {"megatron-gpt-530b", 529.6},
      {"megatron-gpt-1t", 1008.0}};
  for (const auto& [name, billions] : table) {
    SCOPED_TRACE(name);
    EXPECT_NEAR(static_cast<double>(catalog_total(name)) / 1e9, billions, 0.05);
  }
}

TEST(ModelCatalog, NamesAreSortedLowercaseDash) {
  const auto names = model_catalog_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_GE(names.size(), 29u);
  for (const auto& n : names) EXPECT_EQ(n.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_ "), std::string::npos) << n;
}

TEST(ModelCatalog, UnknownNameSuggestsClosest) {
  try {
    model_from_catalog("llama-3.1-8");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("llama-3.1-8b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_model("no/such/config.json"), InputError);
}
