// Under Transformer Engine's fp8 each Linear keeps the fp8 copy of its input for the weight gradient: one byte per
// element where bf16 keeps two (transformer_engine/pytorch/module/linear.py, layernorm_linear.py,
// layernorm_mlp.py). The norm inputs, attention's q, k and v and the fc1 output stay 16-bit.
#include <gtest/gtest.h>

#include "gpuplan/api.hpp"

using gpuplan::api::Question;
using nlohmann::json;

namespace {

double activations(const char* precision, const char* framework = "megatron") {
  const json r = gpuplan::api::run_json(Question::memory, {{"model", "llama-3.1-8b"}, {"gpus", 1}, {"seq_len", 4096},
                                                           {"precision", precision}, {"framework", framework}});
  return r["per_gpu"]["activations"].get<double>();
}

}  // namespace

TEST(Fp8Activations, EachLinearKeepsOneByteInputs) {
  // Llama-3.1-8B: hidden 4096, FFN 14336, 32 layers; one microbatch of 4096 tokens at tp 1. The four GEMM inputs of
  // a layer (QKV, attention output, MLP up, MLP down) are 4096 + 4096 + 4096 + 14336 = 26624 channels per token,
  // each one byte smaller: 4096 x 26624 x 32 bytes.
  const double saved = 4096.0 * 26624.0 * 32.0;
  EXPECT_DOUBLE_EQ(activations("bf16") - activations("fp8"), saved);
}

TEST(Fp8Activations, TorchtitanFloat8IsNotTransformerEngine) {
  EXPECT_DOUBLE_EQ(activations("bf16", "torchtitan"), activations("fp8", "torchtitan"));
}
