// Activation tables checked against hand derivations from the papers they come from.
#include <gtest/gtest.h>

#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "memory/internal.hpp"

using namespace gpuplan;

namespace {

// A GPT-3-style block as in Korthikanti et al.: MHA, GeLU MLP with f = 4h, LayerNorm, learned positions.
ModelConfig gpt_block(std::int64_t layers = 8) {
  ModelConfig m;
  m.name = "test-gpt";
  m.model_type = "custom";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.head_dim = 64;
  m.ffn_hidden = 4096;
  m.vocab = 51200;
  m.max_positions = 2048;
  m.mlp = MlpKind::plain;
  m.norm = NormKind::layernorm;
  m.positions = PositionKind::learned;
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
  return m;
}

memory::ActivationContext context(const ModelConfig& m, double t, bool sp, bool selective, bool dropout) {
  memory::ActivationContext c;
  c.model = &m;
  c.seq_local = 2048;
  c.keys_per_query = 2048;
  c.micro_batch = 4;
  c.tp = t;
  c.etp = t;
  c.sequence_parallel = sp;
  c.element_bytes = 2;
  c.dropout = dropout;
  c.attention = Attention::eager;
  c.selective = selective;
  c.impl = Impl::megatron;
  return c;
}

double layer_bytes(const memory::ActivationContext& c) {
  memory::Ledger g("activations", nullptr);
  return memory::layer_activation_bytes(c, false, g);
}

}  // namespace

// Korthikanti et al. 2022 (arXiv 2205.05198) table 2, per layer, 16-bit activations and 1-byte dropout masks.
// The paper neglects the LayerNorm statistics (fp32 mean and rstd, 8 bytes per token for each of the two norms);
// they are added here explicitly so the rest must match the paper to the byte.
TEST(MemoryActivations, KorthikantiTableFallsOut) {
  const ModelConfig m = gpt_block();
  const double s = 2048, b = 4, h = 1024, a = 16;
  const double sbh = s * b * h;
  for (double t : {1.0, 2.0, 4.0, 8.0}) {
    const double stats_replicated = 16 * s * b;
    // No parallelism / TP without SP: sbh(10 + 24/t + 5as/(ht)).
    EXPECT_DOUBLE_EQ(layer_bytes(context(m, t, false, false, true)),
                     sbh * (10 + 24 / t + 5 * a * s / (h * t)) + stats_replicated) << "t=" << t;
    // TP + selective recompute: sbh(10 + 24/t).
    EXPECT_DOUBLE_EQ(layer_bytes(context(m, t, false, true, true)), sbh * (10 + 24 / t) + stats_replicated);
    if (t > 1) {
      // TP + SP: sbh(34/t + 5as/(ht)); TP + SP + selective: 34sbh/t.
      EXPECT_DOUBLE_EQ(layer_bytes(context(m, t, true, false, true)),
                       sbh * (34 / t + 5 * a * s / (h * t)) + stats_replicated / t);
      EXPECT_DOUBLE_EQ(layer_bytes(context(m, t, true, true, true)), 34 * sbh / t + stats_replicated / t);
    }
  }
}

TEST(MemoryActivations, FullRecomputeKeepsOnlyTheLayerInput) {
  // Korthikanti et al. table 2 last row: 2sbh per layer (2sbh/t with SP).
  const ModelConfig m = gpt_block();
  memory::Ledger g("activations", nullptr);
  EXPECT_DOUBLE_EQ(memory::checkpointed_layer_bytes(context(m, 1, false, false, true), g), 2.0 * 2048 * 4 * 1024);
  memory::Ledger g2("activations", nullptr);
  EXPECT_DOUBLE_EQ(memory::checkpointed_layer_bytes(context(m, 8, true, false, true), g2), 2.0 * 2048 * 4 * 1024 / 8);
}

TEST(MemoryActivations, GqaSwigluAndFlashChangeTheTerms) {
  // Llama-style block (Fujii et al. 2024 attention part with Megatron's saved tensors): without dropout, flash
  // attention keeps q, k, v (k and v at k/a width), its fp32 logsumexp (4 bytes x heads per token) and output.
  ModelConfig m = gpt_block();
  m.kv_heads = 4;
  m.mlp = MlpKind::gated;
  m.ffn_hidden = 2816;
  m.norm = NormKind::rmsnorm;
  memory::ActivationContext c = context(m, 1, false, false, false);
  c.attention = Attention::flash;
  const double s = 2048, b = 4, h = 1024, a = 16, kv = 4, f = 2816;
  const double tokens = s * b;
  const double norms = 2 * (2 * tokens * h + 4 * tokens);               // 2 RMSNorm inputs + rstd
  const double attention = 2 * tokens * h                                // QKV input
                           + 2 * tokens * h + 2 * 2 * tokens * h * kv / a // q, k, v
                           + 4 * tokens * a                               // logsumexp
                           + 2 * tokens * h;                              // output projection input
  const double mlp = 2 * tokens * h + 2 * 2 * tokens * f + 2 * tokens * f;  // input, gate+up, down input
  EXPECT_DOUBLE_EQ(layer_bytes(c), norms + attention + mlp);
}

TEST(MemoryActivations, PipelineFirstStageHoldsAllLayersWorthOfOneMicrobatch) {
  // 1F1B: stage i holds min(p - i, m) microbatches of its L/p layers, so stage 0 holds L layers' worth.
  MemoryInputs in;
  in.model = gpt_block(8);
  in.training.seq_len = 2048;
  in.training.micro_batch = 1;
  in.training.global_batch = 16;
  in.layout.pp = 4;
  in.layout.attention = Attention::flash;
  in.overheads.enabled = false;
  in.capacity_bytes = 80'000'000'000;
  const MemoryReport r = estimate_memory(in);
  ASSERT_EQ(r.stages.size(), 4u);
  EXPECT_EQ(r.microbatches, 16);
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(r.stages[static_cast<std::size_t>(i)].in_flight, 4 - i);
  memory::ActivationContext c = context(*in.model, 1, false, false, false);
  c.micro_batch = 1;
  c.attention = Attention::flash;
  const double per_layer = layer_bytes(c);
  const double token_ids = 8.0 * 2048;  // the first stage also keeps the int64 input ids of each microbatch
  EXPECT_NEAR(static_cast<double>(r.stages[0].activations), 4 * (2 * per_layer + token_ids), 1.0);
  EXPECT_NEAR(static_cast<double>(r.stages[1].activations), 3 * 2 * per_layer, 1.0);
  // Only the last stage holds logits: fp32 softmax + transient 16-bit logits, s x b x V each.
  EXPECT_EQ(r.stages[0].logits, 0);
  EXPECT_EQ(r.stages[3].logits, static_cast<bytes_t>((4 + 2) * 2048.0 * 51200));
}

TEST(MemoryActivations, InterleavedScheduleMatchesMegatronFactor) {
  // Megatron-LM: the first stage holds L layers' worth x (1 + (p - 1)/(p v)) with v model chunks per rank.
  MemoryInputs in;
  in.model = gpt_block(16);
  in.training.global_batch = 64;
  in.layout.pp = 4;
  in.layout.vpp = 2;
  in.layout.attention = Attention::flash;
  in.overheads.enabled = false;
  in.capacity_bytes = 80'000'000'000;
  const MemoryReport r = estimate_memory(in);
  const double p = 4, v = 2;
  // In chunk-microbatches: 2(p - 1) + (v - 1)p + 1 = p v (1 + (p - 1)/(p v)).
  EXPECT_DOUBLE_EQ(static_cast<double>(r.stages[0].in_flight), p * v * (1 + (p - 1) / (p * v)));
}

TEST(MemoryActivations, GradientAccumulationKeepsGradientsWithActivations) {
  // PyTorch frees gradients at zero_grad; with one microbatch the forward peak holds none, with accumulation the
  // second microbatch's forward runs beside the full gradient buffer (docs/memory.md section 8).
  MemoryInputs in;
  in.model = gpt_block(4);
  in.layout.impl = Impl::torch_nn;
  in.training.precision = Precision::fp32;
  in.overheads.enabled = false;
  in.capacity_bytes = 80'000'000'000;
  const StageMemory one = estimate_memory(in).worst();
  EXPECT_EQ(one.forward_peak, one.weights + one.optimizer_states + one.activations + one.logits);
  in.training.global_batch = 4;
  const StageMemory acc = estimate_memory(in).worst();
  EXPECT_EQ(acc.forward_peak, acc.weights + acc.optimizer_states + acc.gradients + acc.activations + acc.logits);
}
