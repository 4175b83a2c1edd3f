// Bad config.json files and impossible architectures are input errors that name the field.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace {

using gpuplan::test::error_of;
using gpuplan::test::contains;

// The message of the InputError `f` throws, or "" when it throws none.
ModelConfig small_llama() {
  return model_from_hf_config(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})", "config.json");
}

}  // namespace

TEST(HfConfigErrors, UnknownModelTypeListsAccepted) {
  const auto msg = error_of([] { model_from_hf_config(R"({"model_type": "t5"})", "config.json"); });
  EXPECT_TRUE(contains(msg, "config.json: model_type")) << msg;
  EXPECT_TRUE(contains(msg, "\"t5\"")) << msg;
  EXPECT_TRUE(contains(msg, "deepseek_v3")) << msg;
}

TEST(HfConfigErrors, MissingRequiredField) {
  const auto msg = error_of([] {
    model_from_hf_config(R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 100})", "config.json");
  });
  EXPECT_TRUE(contains(msg, "config.json: hidden_size: missing")) << msg;
}

TEST(HfConfigErrors, MalformedJson) {
  const auto msg = error_of([] { model_from_hf_config("{\"model_type\": \"llama\",", "my/config.json"); });
  EXPECT_TRUE(contains(msg, "my/config.json")) << msg;
  EXPECT_TRUE(contains(msg, "malformed JSON")) << msg;
  EXPECT_FALSE(error_of([] { model_from_hf_config("[1, 2]", "config.json"); }).empty());
  // A number beyond double range is a JSON range error, not a parse error (found by the fuzzer).
  EXPECT_TRUE(contains(error_of([] { model_from_hf_config("{\"hidden_size\": 1e405}", "c.json"); }), "malformed JSON"));
  // A float beyond int64 where an integer belongs is an input error, not undefined behaviour (found by the fuzzer).
  EXPECT_TRUE(contains(error_of([] {
                         model_from_hf_config(R"({"model_type": "qwen2", "vocab_size": 1.52e53, "hidden_size": 896,
                                                 "intermediate_size": 4864, "num_hidden_layers": 24,
                                                 "num_attention_heads": 14, "num_key_value_heads": 2})",
                                              "c.json");
                       }),
                       "vocab_size"));
}

TEST(HfConfigErrors, WrongTypes) {
  const auto msg = error_of([] {
    model_from_hf_config(R"({"model_type": "llama", "hidden_size": "big", "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})", "config.json");
  });
  EXPECT_TRUE(contains(msg, "config.json: hidden_size: \"big\"")) << msg;
  EXPECT_FALSE(error_of([] {
                 model_from_hf_config(R"({"model_type": "llama", "hidden_size": 64.5, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})", "config.json");
               }).empty());
}

TEST(ModelValidate, ImpossibleValuesNameTheField) {
  ModelConfig m = small_llama();
  m.layers = 0;
  EXPECT_TRUE(contains(error_of([&] { validate(m); }), "layers: 0")) << error_of([&] { validate(m); });

  m = small_llama();
  m.kv_heads = 3;  // does not divide 4 heads
  EXPECT_TRUE(contains(error_of([&] { validate(m); }), "kv_heads")) << error_of([&] { validate(m); });

  m = small_llama();
  m.heads = 5;  // does not divide hidden 64, no explicit head_dim
  m.kv_heads = 5;
  m.head_dim = 0;
  EXPECT_TRUE(contains(error_of([&] { validate(m); }), "heads")) << error_of([&] { validate(m); });

  m = small_llama();
  m.moe.routed_experts = 4;
  m.moe.expert_ffn_hidden = 32;
  m.moe.top_k = 5;
  EXPECT_TRUE(contains(error_of([&] { validate(m); }), "top_k: 5")) << error_of([&] { validate(m); });

  m = small_llama();
  m.hidden = -64;
  EXPECT_TRUE(contains(error_of([&] { validate(m); }), "hidden")) << error_of([&] { validate(m); });
}

TEST(ModelValidate, HundredTrillionParametersWithoutOverflow) {
  // A GPT-style model with l = 2000 layers and h = 65536, V = 51200, s = 2048:
  //   12 l h^2 + 13 l h + (V + s) h + 2h (final LayerNorm)
  const std::int64_t l = 2000, h = 65536, V = 51200, s = 2048;
  const std::int64_t expected = 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h;
  EXPECT_GT(expected, 100'000'000'000'000LL);
  const ModelConfig m = model_from_hf_config(R"({"model_type": "gpt2", "n_layer": 2000, "n_embd": 65536,
      "n_head": 512, "vocab_size": 51200, "n_positions": 2048})", "config.json");
  EXPECT_EQ(count_params(m).total, expected);
  EXPECT_GT(flops_per_token(m, 2048).training, 6.0 * 1e14);
}

TEST(ModelValidate, OverflowingSizesAreInputErrors) {
  ModelConfig m = small_llama();
  m.layers = 100000;
  m.hidden = 1LL << 22;
  m.ffn_hidden = 1LL << 24;
  m.heads = 1LL << 10;
  m.kv_heads = m.heads;
  m.head_dim = 0;
  EXPECT_THROW(count_params(m), InputError);
}
