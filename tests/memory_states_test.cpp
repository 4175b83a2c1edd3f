// Model states and sharding, checked against the published byte-per-parameter tables (docs/memory.md sources).
#include <gtest/gtest.h>

#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"

using namespace gpuplan;

namespace {

MemoryInputs params_only(double params) {
  MemoryInputs in;
  in.params = params;
  in.overheads.enabled = false;
  in.capacity_bytes = 80'000'000'000;
  return in;
}

bytes_t states(const StageMemory& s) { return s.weights + s.master_weights + s.gradients + s.optimizer_states; }

}  // namespace

TEST(MemoryStates, SevenBillionWithAdamInFp16IsEighteenBytesPerParameter) {
  // The chapter's worked example: 2 (fp16 weights) + 4 (fp32 master) + 4 (fp32 grads) + 4 + 4 (Adam m, v).
  MemoryInputs in = params_only(7e9);
  in.training.precision = Precision::fp16;
  const MemoryReport r = estimate_memory(in);
  EXPECT_EQ(r.worst().weights, 14'000'000'000);
  EXPECT_EQ(r.worst().master_weights, 28'000'000'000);
  EXPECT_EQ(r.worst().gradients, 28'000'000'000);
  EXPECT_EQ(r.worst().optimizer_states, 56'000'000'000);
  EXPECT_EQ(states(r.worst()), 126'000'000'000);
  EXPECT_FALSE(r.activations_known);
  EXPECT_FALSE(r.fits);  // 126 GB > 80 GB before any activation
}

TEST(MemoryStates, ZeroPaperSixteenBytesShardByStage) {
  // ZeRO paper (arXiv 1910.02054) fig. 1 with fp16 grads: stage 1 = 4 + 12/d, stage 2 = 2 + 14/d, stage 3 = 16/d.
  const double p = 8e9, d = 8;
  for (int stage = 0; stage <= 3; ++stage) {
    MemoryInputs in = params_only(p);
    in.training.precision = Precision::fp16;
    in.training.grad_dtype = DType::fp16;
    in.layout.gpus = 8;
    in.layout.zero = stage;
    const double expected[] = {16 * p, (4 + 12 / d) * p, (2 + 14 / d) * p, 16 / d * p};
    EXPECT_EQ(states(estimate_memory(in).worst()), static_cast<bytes_t>(expected[stage])) << "stage " << stage;
  }
}

TEST(MemoryStates, MegatronDistributedOptimizerKeepsTheGradientBuffer) {
  // Megatron-LM dist_optimizer.md: bf16 params / fp32 grads: 18 without, 6 + 12/d with the distributed optimizer.
  MemoryInputs in = params_only(4e9);
  in.layout.gpus = 4;
  EXPECT_EQ(states(estimate_memory(in).worst()), static_cast<bytes_t>(18 * 4e9));
  in.layout.zero = 1;
  EXPECT_EQ(states(estimate_memory(in).worst()), static_cast<bytes_t>((6 + 12.0 / 4) * 4e9));
}

TEST(MemoryStates, OptimizerAndPrecisionTable) {
  // docs/memory.md table 1: fp32 Adam 16, fp32 SGD momentum 12, plain SGD 8, mixed SGD momentum with
  // fp16 grads 12, mixed 8-bit Adam with fp16 grads 10 (plus block absmax scales: 2 x 4 bytes per 2048 values).
  struct Row { Precision precision; Optimizer opt; DType grad; double bytes; };
  const Row rows[] = {{Precision::fp32, Optimizer::adam, DType::fp32, 16},
                      {Precision::fp32, Optimizer::adamw, DType::fp32, 16},
                      {Precision::fp32, Optimizer::sgd_momentum, DType::fp32, 12},
                      {Precision::fp32, Optimizer::sgd, DType::fp32, 8},
                      {Precision::bf16, Optimizer::sgd_momentum, DType::bf16, 12},
                      {Precision::bf16, Optimizer::adam_8bit, DType::bf16, 10 + 8.0 / 2048}};
  for (const auto& row : rows) {
    MemoryInputs in = params_only(2048e6);
    in.training.precision = row.precision;
    in.training.optimizer = row.opt;
    in.training.grad_dtype = row.grad;
    EXPECT_EQ(states(estimate_memory(in).worst()), static_cast<bytes_t>(row.bytes * 2048e6)) << to_string(row.opt);
  }
}

TEST(MemoryStates, NoMasterWeightsDropsTheFp32Copy) {
  MemoryInputs in = params_only(1e9);
  in.training.master_weights = false;
  EXPECT_EQ(estimate_memory(in).worst().master_weights, 0);
}

TEST(MemoryStates, OffloadMovesStatesToHostOrNvme) {
  // ZeRO-Offload (arXiv 2101.06840): the GPU keeps 16-bit weights; master, moments and fp32 grads go to the host.
  MemoryInputs in = params_only(8e9);
  in.layout.gpus = 8;
  in.layout.zero = 2;
  in.layout.offload = Offload::optimizer;
  const StageMemory s = estimate_memory(in).worst();
  EXPECT_EQ(s.weights, static_cast<bytes_t>(2 * 8e9));
  EXPECT_EQ(s.master_weights + s.optimizer_states + s.gradients, 0);
  EXPECT_EQ(s.host, static_cast<bytes_t>((4 + 8 + 4) * 8e9 / 8));
  in.layout.zero = 3;
  in.layout.offload = Offload::optimizer_and_params;
  in.layout.offload_target = OffloadTarget::nvme;
  const StageMemory n = estimate_memory(in).worst();
  EXPECT_EQ(n.weights, 0);
  EXPECT_EQ(n.nvme, static_cast<bytes_t>((2 + 4 + 8 + 4) * 8e9 / 8));
}

TEST(MemoryStates, HugeModelsAndMillionsOfGpusDoNotOverflow) {
  MemoryInputs in = params_only(1e14);  // 100 trillion parameters
  in.layout.gpus = 1'000'000;
  in.layout.zero = 3;
  const StageMemory s = estimate_memory(in).worst();
  EXPECT_EQ(states(s), static_cast<bytes_t>(18 * 1e14 / 1e6));
  in.layout.zero = 0;
  EXPECT_EQ(states(estimate_memory(in).worst()), static_cast<bytes_t>(18 * 1e14));
}

TEST(MemoryLayout, BadLayoutsNameTheOption) {
  MemoryInputs in = params_only(1e9);
  in.layout.gpus = 12;
  in.layout.tp = 8;
  try {
    resolve_layout(in);
    FAIL() << "12 GPUs do not factor into tp 8";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "layout.gpus");  // the request field; the command line shows it as --gpus
    EXPECT_NE(std::string(e.what()).find("multiple of 8"), std::string::npos);
  }
  in.layout.gpus = 8;
  in.layout.tp = 0;
  EXPECT_THROW(resolve_layout(in), InputError);
  in.layout.tp = 1;
  in.layout.zero = 4;
  EXPECT_THROW(resolve_layout(in), InputError);
  in.layout.zero = 0;
  in.layout.offload = Offload::optimizer;
  EXPECT_THROW(resolve_layout(in), InputError);  // offload needs ZeRO
}
