// torchtitan's --recompute selective is its op-level selective checkpointing (torchtitan/distributed/
// activation_checkpoint.py _apply_op_sac with the save list of torchtitan/models/llama3/infra/parallelize.py):
// inside each block the outputs of aten.mm, of the attention kernel and of the reduce-scatters are kept, except
// every second mm in call order, and the rest of the block's forward runs again in its backward. For Llama the
// mms run wq, wk, wv, wo, w1, w3, w2: wq, wv, w1 and w2 are kept, wk, wo and w3 recomputed. The values below are
// derived here from those shapes, not taken from gpuplan's output.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "gpuplan/api.hpp"
#include "test_support.hpp"

namespace api = gpuplan::api;
using gpuplan::test::time_term;

namespace {

// Llama-3.1-8B: hidden 4096, 32 query heads and 8 key/value heads of 128, FFN 14336, 32 layers.
constexpr double kHidden = 4096, kKv = 1024, kFfn = 14336, kHeads = 32, kLayers = 32;
constexpr double kSeq = 4096, kBf16 = 2;

api::EstimateRequest llama_8b(const std::string& recompute, std::int64_t tp) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.framework = "torchtitan";
  r.training.seq_len = static_cast<std::int64_t>(kSeq);
  r.training.global_batch = 8 / tp;
  r.layout.tp = tp;
  r.layout.sequence_parallel = tp > 1;
  r.layout.recompute = recompute;
  return r;
}

double activations(const api::EstimateResult& r) { return static_cast<double>(*r.memory.per_gpu.activations); }

}  // namespace

// Full recomputation keeps each block's input; op-level checkpointing keeps that and the kept ops' outputs.
TEST(TorchtitanOpSac, KeepsTheOddMmsAttentionOutputAndReduceScatters) {
  // tp 1: wq (4096), wv (1024), w1 (14336), w2 (4096) outputs, the attention output and its fp32 logsumexp.
  const double kept_tp1 = kSeq * (kBf16 * (kHidden + kKv + kFfn + kHidden + kHidden) + 4 * kHeads);
  const api::EstimateResult selective = api::run(llama_8b("selective", 1));
  EXPECT_NEAR(activations(selective) - activations(api::run(llama_8b("full", 1))), kLayers * kept_tp1, 1e3);

  // tp 2 with sequence parallelism: the column-parallel outputs and the attention split over the ranks, w2's partial
  // sums whole, the two reduce-scatters' outputs and the block input (the full recomputation's too) sequence-split.
  const double tp = 2;
  const double kept_tp2 =
      kSeq * (kBf16 * ((kHidden + kKv + kFfn) / tp + kHidden + kHidden / tp + 2 * kHidden / tp) + 4 * kHeads / tp);
  const double selective_tp2 = activations(api::run(llama_8b("selective", 2)));
  EXPECT_NEAR(selective_tp2 - activations(api::run(llama_8b("full", 2))), kLayers * kept_tp2, 1e3);
}

TEST(TorchtitanOpSac, RecomputesEverySecondMm) {
  const api::EstimateResult selective = api::run(llama_8b("selective", 1));
  // wk, wo and w3 run again: no faster than their FLOPs at the H100's dense bf16 peak (989.4 TFLOP/s).
  const double recomputed_flops_per_token = 2 * (kHidden * kKv + kHidden * kHidden + kHidden * kFfn);
  const double tokens_per_gpu = kSeq;   // one sequence per GPU
  EXPECT_GT(time_term(selective, "recompute"), kLayers * recomputed_flops_per_token * tokens_per_gpu / 989.4e12);
  // ... and less than the whole layer's forward that full recomputation runs.
  EXPECT_LT(time_term(selective, "recompute"), time_term(api::run(llama_8b("full", 1)), "recompute"));
  // The hardware FLOPs count them, and the attention kernel's not at all.
  const double tokens_per_step = 8 * kSeq;
  const double hardware_minus_model = (selective.throughput.hardware_tflops_per_gpu -
                                       selective.throughput.model_tflops_per_gpu) *
                                      1e12 * selective.time.step_s * 8 / tokens_per_step;
  EXPECT_NEAR(hardware_minus_model, kLayers * recomputed_flops_per_token, 1e-6 * kLayers * recomputed_flops_per_token);
}

// Megatron-LM's selective recomputation stays what it was: the attention core only.
TEST(TorchtitanOpSac, OnlyUnderTorchtitan) {
  api::EstimateRequest megatron = llama_8b("selective", 1);
  megatron.training.framework = "megatron";
  api::EstimateRequest none = megatron;
  none.layout.recompute = "none";
  EXPECT_DOUBLE_EQ(activations(api::run(megatron)), activations(api::run(none)));
}

// When a torchtitan job does not fit, its per-op checkpointing is offered at the FLOPs it recomputes over the
// training FLOPs of a token: 6 x the matmul parameters plus 12 x layers x hidden x sequence (full attention, the
// Megatron/PaLM convention; the untied output layer included).
TEST(TorchtitanOpSac, OfferedWhenItDoesNotFitAtItsRecomputeCost) {
  api::MemoryRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.hardware.gpu = "h100-sxm-80gb";
  r.layout.gpus = 8;
  r.training.framework = "torchtitan";
  r.training.seq_len = 6144;
  r.training.micro_batch = 2;
  const api::MemoryResult result = api::run(r);
  ASSERT_FALSE(result.fits);
  const double layer_matmuls = 2 * kHidden * kHidden + 2 * kHidden * kKv + 3 * kHidden * kFfn;
  const double matmuls = kLayers * layer_matmuls + kHidden * 128256;
  const double training = 6 * matmuls + 12 * kLayers * kHidden * 6144;
  const double recomputed = kLayers * 2 * (kHidden * kKv + kHidden * kHidden + kHidden * kFfn);
  bool offered = false;
  for (const api::SuggestionReport& s : result.suggestions) {
    if (s.change != "--recompute selective") continue;
    offered = true;
    EXPECT_NEAR(s.extra_compute_fraction, recomputed / training, 1e-9);
  }
  EXPECT_TRUE(offered);
}
