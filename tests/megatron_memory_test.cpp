// Memory as Megatron-Core with Transformer Engine allocates it, against real runs and hand derivations.
// Measured figures: validation/data/b200-megatron-llama3-70b.json (MooreThreads/SimuMax
// docs/b200/b200_release_v1.2_summary.json at 4dcaae51, Apache-2.0): Megatron-LM 23e00ed with TE 2.11 on 8x B200,
// Llama-3-70B cut to 12 layers, seq 4096, micro-batch 1, bf16, distributed optimizer, TE fused cross-entropy.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

namespace api = gpuplan::api;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

api::MemoryRequest b200_run(std::int64_t tp, std::int64_t pp) {
  api::MemoryRequest r;
  r.model.name_or_path = "llama-3.1-70b";   // the Llama-3-70B shape (vocab 128,256)
  r.overrides.layers = 12;
  r.hardware.gpu = "b200";
  r.layout.gpus = 8;
  r.layout.tp = tp;
  r.layout.pp = pp;
  r.layout.sequence_parallel = tp > 1;
  r.layout.zero = 1;
  r.training.seq_len = 4096;
  r.training.global_batch = 4 * (8 / (tp * pp));   // 4 microbatches per data-parallel rank
  r.training.loss = "fused-te";
  r.all_stages = true;
  return r;
}

double allocated_mib(const api::MemoryResult& m, std::size_t stage) {
  return static_cast<double>(m.stages->at(stage).allocated_peak) / kMiB;
}

}  // namespace

TEST(MegatronMemory, AllocatedPeakWithinOnePercentOfRealRuns) {
  // torch.cuda.max_memory_allocated, the largest over the stage's ranks (MiB).
  struct Run {
    std::int64_t tp, pp;
    std::size_t stage;
    double measured_mib;
  } runs[] = {{1, 2, 0, 68149.2}, {1, 2, 1, 64479.48}, {2, 1, 0, 62136.4}, {4, 1, 0, 40009.77}, {8, 1, 0, 28965.36}};
  for (const Run& run : runs) {
    const api::MemoryResult m = api::run(b200_run(run.tp, run.pp));
    EXPECT_NEAR(allocated_mib(m, run.stage) / run.measured_mib, 1.0, 0.01)
        << "tp " << run.tp << " pp " << run.pp << " stage " << run.stage;
  }
}

TEST(MegatronMemory, TransformerEngineKeepsOneWeightGradientBufferPerShape) {
  // Llama-3-70B at TP 2: fused QKV [(8192 + 2 x 1024) / 2, 8192], output projection [8192, 8192 / 2], fc1 (gate and
  // up) [2 x 28672 / 2, 8192], fc2 [8192, 28672 / 2]; every layer has the same four shapes, so four bf16 buffers.
  const double elements = (5120.0 * 8192) + (8192.0 * 4096) + (28672.0 * 8192) + (8192.0 * 14336);
  const api::MemoryResult m = api::run(b200_run(2, 1));
  EXPECT_EQ(m.per_gpu.wgrad_buffers, static_cast<std::int64_t>(2 * elements));
  // The same four on each pipeline stage, whatever its layer count.
  const api::MemoryResult piped = api::run(b200_run(1, 2));
  EXPECT_EQ(piped.stages->at(0).wgrad_buffers, piped.stages->at(1).wgrad_buffers);
  // The other implementations have no such buffers.
  api::MemoryRequest hf = b200_run(2, 1);
  hf.layout.impl = "hf";
  hf.training.loss = "unfused";
  EXPECT_EQ(api::run(hf).per_gpu.wgrad_buffers, 0);
}

TEST(MegatronMemory, VocabularyPaddedToAMultipleOf128TimesTp) {
  // 128,256 = 1002 x 128: a multiple of 128 x 2 (501 x 256), not of 128 x 4 = 512 (250.5) nor of 1024.
  EXPECT_EQ(*api::run(b200_run(2, 1)).vocab_padded, 128256);
  EXPECT_EQ(*api::run(b200_run(4, 1)).vocab_padded, 128512);   // 251 x 512
  EXPECT_EQ(*api::run(b200_run(8, 1)).vocab_padded, 129024);   // 126 x 1024
  // The padded rows are parameters: at TP 4 the 256 extra rows of the embedding and of the output layer, 8192
  // wide, split over 4 ranks, cost 9 bytes each under bf16 + the distributed optimizer over dp 2 (2 bf16 weight +
  // 4 fp32 main_grad + (4 master + 8 Adam) / 2).
  api::MemoryRequest unpadded = b200_run(4, 1);
  unpadded.training.vocab_divisible_by = 1;
  const std::int64_t padded_states = api::run(b200_run(4, 1)).per_gpu.weights;
  EXPECT_EQ(padded_states - api::run(unpadded).per_gpu.weights, 2 * 256 * 8192 / 4 * 2);
}

TEST(MegatronMemory, LossModesKeepWhatTheirKernelsKeep) {
  // The last stage of tp 1, pp 2 holds the logits of one microbatch: 4096 tokens x 128,256 vocabulary.
  const double logits = 4096.0 * 128256;
  auto logits_of = [](const std::string& loss) {
    api::MemoryRequest r = b200_run(1, 2);
    r.training.loss = loss;
    return api::run(r).stages->at(1).logits.value_or(-1);
  };
  // TE's fused cross-entropy keeps the bf16 logits (its gradient overwrites them) and 4 fp32 values per token.
  EXPECT_EQ(logits_of("fused-te"), static_cast<std::int64_t>(2 * logits + 16 * 4096));
  // Megatron's unfused and native fused losses upcast to an fp32 softmax beside the bf16 logits.
  EXPECT_EQ(logits_of("unfused"), static_cast<std::int64_t>(6 * logits));
  EXPECT_EQ(logits_of("fused-native"), static_cast<std::int64_t>(6 * logits));
  EXPECT_EQ(logits_of("chunked"), 0);
  // --fused-loss is the older name of chunked.
  api::MemoryRequest old = b200_run(1, 2);
  old.training.loss = "unfused";
  old.training.fused_loss = true;
  EXPECT_EQ(*api::run(old).stages->at(1).logits, 0);
}

TEST(MegatronMemory, FusedLossesOfMegatronAreRejectedForOtherImplementations) {
  api::MemoryRequest r = b200_run(1, 1);
  r.layout.gpus = 1;
  r.training.global_batch = 4;
  r.layout.impl = "hf";
  r.training.loss = "fused-te";
  try {
    api::run(r);
    FAIL() << "fused-te with impl hf was accepted";
  } catch (const gpuplan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.loss"), std::string::npos) << e.what();
  }
}

TEST(MegatronMemory, AllocatedReservedAndOutsideTorchAddUpToTheTotal) {
  const api::MemoryResult m = api::run(b200_run(1, 2));
  for (const auto& stage : *m.stages) {
    EXPECT_GT(stage.reserved_peak, stage.allocated_peak);
    EXPECT_GT(stage.outside_torch, 0);
    EXPECT_NEAR(static_cast<double>(stage.reserved_peak + stage.outside_torch), static_cast<double>(stage.total), 1.0);
  }
}

TEST(MegatronMemory, PlanHonoursTheGradientDtypeAndTheLoss) {
  api::PlanRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 4096;
  r.training.global_batch = 64;
  r.training.grad_dtype = "bf16";
  r.training.loss = "fused-te";
  r.space.zero = {1};
  r.ranking.top = 1;
  r.ranking.threads = 1;
  const api::PlanResult result = api::run(r);
  ASSERT_FALSE(result.plans.empty());
  const api::PlanReport& best = result.plans.front();
  // bf16 gradients unsharded under ZeRO-1: 2 bytes per local parameter, as many bytes as the bf16 weights.
  EXPECT_EQ(best.memory.per_gpu.gradients, best.memory.per_gpu.weights);
  EXPECT_NE(best.command.find("--grad-dtype bf16"), std::string::npos) << best.command;
  EXPECT_NE(best.command.find("--loss fused-te"), std::string::npos) << best.command;
}

TEST(MegatronMemory, TransformerEngineBefore23AllocatesOneDummyPerBackward) {
  // Before TE 2.3 each Linear's backward allocates its dummy weight gradient and Megatron's hook frees it: no
  // cached buffers, one weight's worth during a layer's backward. At TP 1 the buffers are QKV [10240, 8192],
  // projection [8192, 8192], fc1 [57344, 8192] and fc2 [8192, 28672] in bf16; the largest is fc1. Stage 0 peaks in
  // a layer's backward, so its peak drops by the four buffers and gains fc1's.
  const double buffers = 2.0 * (10240.0 * 8192 + 8192.0 * 8192 + 57344.0 * 8192 + 8192.0 * 28672);
  const double fc1 = 2.0 * 57344 * 8192;
  api::MemoryRequest older = b200_run(1, 2);
  older.training.te_version = "2.2";
  const api::MemoryResult before = api::run(older);
  const api::MemoryResult now = api::run(b200_run(1, 2));
  EXPECT_EQ(now.stages->at(0).wgrad_buffers, static_cast<std::int64_t>(buffers));
  EXPECT_EQ(before.stages->at(0).wgrad_buffers, 0);
  EXPECT_NEAR(static_cast<double>(before.stages->at(0).allocated_peak - now.stages->at(0).allocated_peak),
              fc1 - buffers, 1.0);
  older.training.te_version = "two";
  EXPECT_THROW(api::run(older), gpuplan::InputError);
}

TEST(MegatronMemory, BusiestExpertRankHoldsItsShareOfRoutedTokens) {
  // Mixtral-8x7B (hidden 4096, 8 experts of width 14336, top-2, 32 MoE layers) on one stage, tp 2 with sequence
  // parallelism, ep 8, sequence 4096, micro-batch 1. Each rank routes its 2048 tokens twice and the expert-TP pair
  // gathers them: 4096 x 2 = 8192 dispatched rows when balanced. Per row a layer keeps the fc1 input (4096), the
  // gate and up outputs (2 x 14336 / 2) and the fc2 input (14336 / 2) in bf16, and the routing probability
  // (bf16): 2 x (4096 + 14336 + 7168 + 1) bytes.
  api::MemoryRequest r;
  r.model.name_or_path = "mixtral-8x7b";
  r.layout.gpus = 16;
  r.layout.tp = 2;
  r.layout.ep = 8;
  r.layout.sequence_parallel = true;
  r.layout.zero = 1;
  r.training.seq_len = 4096;
  const std::int64_t balanced = *api::run(r).per_gpu.activations;
  r.training.moe_imbalance = 1.5;
  const std::int64_t busiest = *api::run(r).per_gpu.activations;
  const double per_row = 2.0 * (4096 + 14336 + 7168 + 1);
  EXPECT_NEAR(static_cast<double>(busiest - balanced), 32 * 0.5 * 8192 * per_row, 1.0);
  // Padding every expert to a capacity factor of 2 keeps twice the balanced rows, whatever the imbalance.
  r.training.moe_capacity_factor = 2.0;
  r.training.moe_pad_to_capacity = true;
  const std::int64_t padded = *api::run(r).per_gpu.activations;
  EXPECT_NEAR(static_cast<double>(padded - balanced), 32 * 1.0 * 8192 * per_row, 1.0);
  // Before Megatron-Core 0.13 the weighted unpermute kept the expert outputs (2048 x 2 rows of 4096, bf16) and no
  // per-row probability.
  r.training.moe_capacity_factor.reset();
  r.training.moe_pad_to_capacity = false;
  r.training.moe_imbalance = 1.0;
  r.training.megatron_version = "0.12";
  const std::int64_t older = *api::run(r).per_gpu.activations;
  EXPECT_NEAR(static_cast<double>(older - balanced), 32 * (2.0 * 4096 * 4096 - 2.0 * 8192), 1.0);
}

TEST(MegatronMemory, RingAttentionBuffersOfContextParallelism) {
  // Llama-3.1-8B (32 query heads and 8 key/value heads of 128) at cp 4, sequence 32768: 8192 local tokens.
  // The query is 8192 x 4096 x 2 bytes, K and V 8192 x 2 x 1024 x 2, the fp32 log-sum-exp 8192 x 32 x 4.
  // Forward, the last rank of the ring holds the 3 K/V chunks it received and 4 per-step outputs and statistics.
  const double query = 8192.0 * 4096 * 2, key_value = 8192.0 * 2048 * 2, logsumexp = 8192.0 * 32 * 4;
  api::MemoryRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.layout.gpus = 4;
  r.layout.cp = 4;
  r.layout.zero = 1;
  r.training.seq_len = 32768;
  r.training.loss = "chunked";   // no logits: the forward peak is inside a layer
  r.explain = true;
  const api::MemoryResult m = api::run(r);
  bool found = false;
  for (const auto& term : *m.per_gpu.terms) {
    if (term.name.find("ring attention: received") == std::string::npos) continue;
    found = true;
    EXPECT_NEAR(static_cast<double>(term.bytes), 3 * key_value + 4 * (query + logsumexp), 1.0);
  }
  EXPECT_TRUE(found);
}

namespace {

// Llama-3-70B cut to 12 layers at tp 2, cp 4, sequence 32768 on 8 B200s: one of the real context-parallel runs of
// MooreThreads/SimuMax docs/b200/b200_release_v1.2_summary.json (e691807a, Apache-2.0), which ran --cp-comm-type
// a2a.
api::MemoryRequest b200_cp_run(const char* cp_comm_type) {
  api::MemoryRequest r = b200_run(2, 1);
  r.layout.cp = 4;
  r.layout.cp_comm_type = cp_comm_type;
  r.training.seq_len = 32768;
  r.training.global_batch = 4;
  return r;
}

}  // namespace

TEST(MegatronMemory, AllToAllContextParallelKeepsASecondAttentionOutput) {
  // Transformer Engine's AttnFuncWithCPAndQKVOA2A saves the attention output before its all-to-all, and the output
  // projection keeps the one returned: per layer 8192 local tokens x 8192 / tp 2 x 2 bytes more than the ring,
  // for the 12 layers of the one microbatch the stage holds.
  const double second_output = 12 * 8192.0 * 4096 * 2;
  const api::MemoryResult ring = api::run(b200_cp_run("p2p"));
  const api::MemoryResult a2a = api::run(b200_cp_run("a2a"));
  EXPECT_NEAR(static_cast<double>(*a2a.stages->at(0).activations - *ring.stages->at(0).activations), second_output, 1.0);
}

TEST(MegatronMemory, AllToAllContextParallelRunWithinOnePercent) {
  // torch.cuda.max_memory_allocated of that run: 70,071.2 MiB, the largest over its 8 ranks.
  EXPECT_NEAR(allocated_mib(api::run(b200_cp_run("a2a")), 0) / 70071.2, 1.0, 0.01);
}
