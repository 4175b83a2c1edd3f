// Model types without a stored config.json: the architecture keys of the published Hugging Face config are
// written inline, and the count comes from the publisher (or is derived by hand in the test).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "gpuplan/model.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace {

using gpuplan::test::significant;

std::int64_t total(const char* json) { return count_params(model_from_hf_config(json, "config.json")).total; }

}  // namespace

TEST(ModelFamilies, Olmo2FullWidthQkNorm) {
  // allenai/OLMo-2-1124-7B; Hugging Face API safetensors.total 7,298,617,344.
  EXPECT_EQ(total(R"({"model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352, "max_position_embeddings": 4096,
      "tie_word_embeddings": false})"),
            7298617344);
}

TEST(ModelFamilies, SmolLM3TiedByDefault) {
  // HuggingFaceTB/SmolLM3-3B-Base; Hugging Face API safetensors.total 3,075,098,624. No tie key: class default.
  EXPECT_EQ(total(R"({"model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
      "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 128256, "max_position_embeddings": 65536})"),
            3075098624);
}

TEST(ModelFamilies, GptNeoxPythia160m) {
  // Pythia paper Table 1: 85,056,000 non-embedding parameters; embed_in and embed_out are 50304 x 768 each.
  EXPECT_EQ(total(R"({"model_type": "gpt_neox", "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
      "num_attention_heads": 12, "vocab_size": 50304, "max_position_embeddings": 2048})"),
            85056000 + 2 * 50304 * 768);
}

TEST(ModelFamilies, BloomEmbeddingLayerNorm) {
  // bigscience/bloom-560m; keras-hub bloom_560m_multi params 559,214,592.
  EXPECT_EQ(total(R"({"model_type": "bloom", "hidden_size": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 250880})"),
            559214592);
}

TEST(ModelFamilies, GemmaMqaWithWideHeads) {
  // google/gemma-2b; keras-hub gemma_2b_en params 2,506,172,416. head_dim 256 x 8 heads = hidden; one kv head.
  EXPECT_EQ(total(R"({"model_type": "gemma", "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 18,
      "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 256000})"),
            2506172416);
}

TEST(ModelFamilies, QwenMoeSharedExpertAndGate) {
  // Qwen/Qwen1.5-MoE-A2.7B; keras-hub qwen1.5_moe_2.7b_en params 14,315,784,192.
  EXPECT_EQ(total(R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
      "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
      "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
      "decoder_sparse_step": 1, "tie_word_embeddings": false})"),
            14315784192);
}

TEST(ModelFamilies, QwenMoeSparseStepAndMlpOnlyLayers) {
  // decoder_sparse_step 2: layers 1, 3 (0-based) are sparse; mlp_only_layers forces 3 dense. One sparse layer.
  const ModelConfig m = model_from_hf_config(R"({"model_type": "qwen2_moe", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100,
      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 0,
      "decoder_sparse_step": 2, "mlp_only_layers": [3]})", "config.json");
  const ParamCounts p = count_params(m);
  EXPECT_EQ(p.moe_layers, 1);
  EXPECT_EQ(p.dense_layers, 3);
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_FALSE(m.is_moe_layer(3));
}

TEST(ModelFamilies, DeepSeekV2LiteWithoutQLora) {
  // deepseek-ai/DeepSeek-V2-Lite model card: 15.7B total parameters. q_lora_rank null: q_proj directly.
  const ParamCounts p = count_params(model_from_hf_config(R"({"model_type": "deepseek_v2", "hidden_size": 2048,
      "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16,
      "num_key_value_heads": 16, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
      "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": null, "kv_lora_rank": 512,
      "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
      "topk_method": "greedy", "tie_word_embeddings": false})", "config.json"));
  EXPECT_EQ(significant(static_cast<double>(p.total), 3), 15.7e9);
  // The card's "2.4B activated" is not checked: counting 6 routed + 2 shared experts, all attention, embedding
  // and head gives 2.66B, and no split of embedding/head reproduces 2.4B exactly (DeepSeek-V3 shows the same
  // gap between 37.6B counted and 37B published).
  EXPECT_EQ(p.dense_layers, 1);
  EXPECT_EQ(p.moe_layers, 26);
  EXPECT_EQ(p.moe_layer.router, 64 * 2048);  // no score-correction bias with greedy routing
}

TEST(ModelFamilies, FalconRefinedWebNonParallelAlibi) {
  // tiiuae/falcon-rw-1b; keras-hub falcon_refinedweb_1b_en params 1,311,625,216. Sequential attention and MLP
  // with two layer norms, full multi-head attention, biases.
  EXPECT_EQ(total(R"({"model_type": "falcon", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32,
      "vocab_size": 50304, "alibi": true, "bias": true, "multi_query": false, "parallel_attn": false,
      "new_decoder_architecture": false})"),
            1311625216);
}

TEST(ModelFamilies, Falcon7bMultiQueryParallel) {
  // The stored tiiuae/falcon-7b config (model_type RefinedWebModel, n_head/n_layer keys). By hand:
  //   qkv 4544 x (71 x 64 + 2 x 64) = 21,229,568; dense 4544^2 = 20,647,936; MLP 2 x 4544 x 18176 = 165,183,488;
  //   one shared LayerNorm 2 x 4544 = 9,088 -> 207,070,080 per layer, x 32 = 6,626,242,560;
  //   embedding 65024 x 4544 = 295,469,056 (tied); ln_f 9,088. Total 6,921,720,704 (published as "7B").
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/hf-configs/tiiuae--falcon-7b/config.json");
  std::ostringstream text;
  text << in.rdbuf();
  const ParamCounts p = count_params(model_from_hf_config(text.str(), "falcon-7b/config.json"));
  EXPECT_EQ(p.dense_layer.total(), 207070080);
  EXPECT_EQ(p.total, 6921720704);
}

TEST(ModelFamilies, MoeLayersInARangeCountAsLayerByLayer) {
  // DeepSeek-V3's first three layers are dense (first_k_dense_replace 3); every later layer is MoE. A model with
  // layer_freq 2 (every other layer) and one with forced-dense layers (Qwen-MoE's mlp_only_layers) too: the count
  // over a range is the number of layers is_moe_layer calls MoE there.
  ModelConfig every = model_from_catalog("deepseek-v3");
  ModelConfig alternate = every;
  alternate.moe.first_dense_layers = 1;
  alternate.moe.layer_freq = 2;
  ModelConfig forced = every;
  forced.moe.dense_layer_ids = {4, 7, 8};
  EXPECT_EQ(every.moe_layers_in(0, 61), 58);
  EXPECT_EQ(every.moe_layers_in(0, 3), 0);
  EXPECT_EQ(alternate.moe_layers_in(0, 10), 4);   // layers 2, 4, 6, 8
  EXPECT_EQ(forced.moe_layers_in(3, 9), 3);       // layers 3, 5, 6
  for (const ModelConfig* m : {&every, &alternate, &forced})
    for (std::int64_t begin = 0; begin <= 12; ++begin)
      for (std::int64_t end = begin; end <= 14; ++end) {
        std::int64_t layer_by_layer = 0;
        for (std::int64_t layer = begin; layer < end; ++layer) layer_by_layer += m->is_moe_layer(layer) ? 1 : 0;
        EXPECT_EQ(m->moe_layers_in(begin, end), layer_by_layer) << begin << ".." << end;
      }
}
