// The gradients DeepSpeed keeps and the copies its optimizer step makes, read from its source:
// - deepspeed/runtime/engine.py get_data_types: with data_types.grad_accum_dtype unset, gradients accumulate in the
//   model's dtype, except under bf16 without ZeRO, where the BF16_Optimizer keeps them in fp32;
// - runtime/zero/stage_1_and_2.py step: the gradients of other ranks' partitions are freed, the partition's are
//   flattened into one 16-bit tensor and cast .to() the fp32 master's dtype;
// - runtime/zero/stage3.py _prepare_fp32_grad_for_sub_group: the same, one sub_group_size sub-group at a time;
// - runtime/fp16/fused_optimizer.py step (FP16_Optimizer, fp16 without ZeRO): every gradient cast to fp32 in a
//   list, then flattened, before the fp16 gradients are dropped;
// - runtime/bf16_optimizer.py (BF16_Optimizer, bf16 without ZeRO): a flat fp32 gradient buffer allocated in its
//   constructor, and backward() adds autograd's bf16 gradients into it without freeing them
//   (update_hp_grads(clear_lp_grads=False); bf16.immediate_grad_update is off by default); the next backward frees
//   them first. ZeRO-3's flat gradient partition is allocated at construction too (stage3.py).
// FusedAdam, which the config's Adam and AdamW run, allocates nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gpuplan/memory.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan {
namespace deepspeed_gradient_memory_test {

// Llama-2-7B: 6,738,415,616 parameters (the Hugging Face checkpoint's count), over 8 data-parallel ranks.
constexpr double kParams = 6'738'415'616.0, kDp = 8;

MemoryInputs llama_7b(int zero, Precision precision) {
  MemoryInputs in;
  in.model = model_from_catalog("llama-2-7b");
  in.training.seq_len = 4096;
  in.training.precision = precision;
  in.layout.gpus = 8;
  in.layout.framework = Framework::deepspeed;
  in.layout.impl = Impl::hf;
  in.layout.zero = zero;
  in.overheads = default_overheads();
  in.capacity_bytes = 80'000'000'000;
  return in;
}

// The bytes the optimizer step allocates beyond the states, as --explain names them (0 when none).
double step_copies(const MemoryInputs& in) {
  const StageMemory worst = estimate_memory(in, true).worst();
  const auto term = std::find_if(worst.terms.begin(), worst.terms.end(),
                                 [](const Term& t) { return t.component == std::string("optimizer step phase"); });
  return term == worst.terms.end() ? 0.0 : term->bytes;
}

double gradients(const MemoryInputs& in) { return static_cast<double>(estimate_memory(in).worst().gradients); }

TEST(DeepSpeedGradients, TheDefaultDtypeFollowsGetDataTypes) {
  TrainingConfig t;
  t.precision = Precision::bf16;
  EXPECT_EQ(gradient_dtype(t, Framework::deepspeed, 0), DType::fp32);   // BF16_Optimizer
  for (int zero = 1; zero <= 3; ++zero) EXPECT_EQ(gradient_dtype(t, Framework::deepspeed, zero), DType::bf16);
  t.precision = Precision::fp16;
  for (int zero = 0; zero <= 3; ++zero) EXPECT_EQ(gradient_dtype(t, Framework::deepspeed, zero), DType::fp16);
  // Megatron-LM, NeMo and torchtitan accumulate in fp32 whatever the ZeRO stage; a given dtype wins everywhere.
  for (Framework f : {Framework::megatron, Framework::nemo, Framework::torchtitan})
    EXPECT_EQ(gradient_dtype(t, f, 1), DType::fp32);
  t.grad_dtype = DType::fp32;
  EXPECT_EQ(gradient_dtype(t, Framework::deepspeed, 1), DType::fp32);
  t.precision = Precision::fp32;
  t.grad_dtype.reset();
  EXPECT_EQ(gradient_element_bytes(t, Framework::deepspeed, 1), 4.0);
}

TEST(DeepSpeedGradients, ZeroOneKeepsEverySixteenBitGradientAndCastsItsPartitionAtTheStep) {
  // ZeRO-1 reduces once a step, so every bf16 gradient is held: 2 B per parameter, half of Megatron's fp32 main_grad.
  const MemoryInputs in = llama_7b(1, Precision::bf16);
  EXPECT_NEAR(gradients(in), kParams * 2, 1.0);
  // The step: the partition's flattened bf16 copy (2 B) and its fp32 cast (4 B) per parameter of the shard.
  EXPECT_NEAR(step_copies(in), kParams / kDp * (2 + 4), 1e3);
  MemoryInputs megatron = in;
  megatron.layout.framework = Framework::megatron;
  megatron.layout.impl = Impl::megatron;
  EXPECT_NEAR(gradients(megatron), kParams * 4, 1e6);   // Megatron pads its buffer to whole buckets
}

TEST(DeepSpeedGradients, ZeroTwoAndThreeHoldTheShardAndZeroThreeCastsOneSubGroup) {
  const MemoryInputs zero2 = llama_7b(2, Precision::bf16);
  EXPECT_NEAR(gradients(zero2), kParams / kDp * 2, 1.0);
  EXPECT_NEAR(step_copies(zero2), kParams / kDp * 6, 1e3);
  MemoryInputs zero3 = llama_7b(3, Precision::bf16);
  EXPECT_NEAR(gradients(zero3), kParams / kDp * 2, 1.0);
  EXPECT_NEAR(step_copies(zero3), kParams / kDp * 6, 1e3);   // the shard (842 M) is within one 1e9 sub-group
  zero3.overheads.optimizer_sub_group_elements = 1e8;
  EXPECT_NEAR(step_copies(zero3), 1e8 * 6, 1e3);
}

TEST(DeepSpeedGradients, WithoutZeroBf16KeepsBothGradientsAndFp16CastsThemAllAtTheStep) {
  const MemoryInputs bf16 = llama_7b(0, Precision::bf16);
  EXPECT_NEAR(gradients(bf16), kParams * (4 + 2), 1.0);   // fp32, and autograd's bf16 ones beside them
  EXPECT_EQ(step_copies(bf16), 0.0);   // the BF16_Optimizer steps on its fp32 buffer in place
  const MemoryInputs fp16 = llama_7b(0, Precision::fp16);
  EXPECT_NEAR(gradients(fp16), kParams * 2, 1.0);
  EXPECT_NEAR(step_copies(fp16), kParams * (4 + 4), 1e3);   // the fp32 casts and their flattened copy
  // Given fp32 gradients, ZeRO-1 only flattens its partition: .to() of an fp32 tensor is the tensor itself.
  MemoryInputs fp32_grads = llama_7b(1, Precision::bf16);
  fp32_grads.training.grad_dtype = DType::fp32;
  EXPECT_NEAR(gradients(fp32_grads), kParams * 4, 1.0);
  EXPECT_NEAR(step_copies(fp32_grads), kParams / kDp * 4, 1e3);
}

TEST(DeepSpeedGradients, BuffersAllocatedAtConstructionHoldThroughTheForward) {
  // One microbatch per step: gradients made in the backward exist in the forward only where DeepSpeed allocated
  // their buffer up front (the BF16_Optimizer's, ZeRO-3's); with two microbatches they persist in any case. So the
  // forward phase grows by the gradients from one microbatch to two below ZeRO-3 with ZeRO, and not otherwise.
  const auto forward = [](int zero, Precision precision, std::int64_t microbatches) {
    MemoryInputs in = llama_7b(zero, precision);
    in.training.global_batch = 8 * microbatches;
    in.overheads.enabled = false;   // the allocator's reserve follows the peak, not the forward
    return static_cast<double>(estimate_memory(in).worst().forward_peak);
  };
  const auto grads = [](int zero, Precision precision) { return gradients(llama_7b(zero, precision)); };
  EXPECT_NEAR(forward(1, Precision::bf16, 2) - forward(1, Precision::bf16, 1), grads(1, Precision::bf16), 1e3);
  EXPECT_NEAR(forward(0, Precision::fp16, 2) - forward(0, Precision::fp16, 1), grads(0, Precision::fp16), 1e3);
  EXPECT_NEAR(forward(0, Precision::bf16, 2), forward(0, Precision::bf16, 1), 1e3);
  EXPECT_NEAR(forward(3, Precision::bf16, 2), forward(3, Precision::bf16, 1), 1e3);
}

TEST(DeepSpeedGradients, HuggingFaceModulesOutsideDeepSpeedKeepTheForeachTemporary) {
  // The hf accounting under another framework: fp32 gradients, and torch.optim's foreach Adam, which allocates
  // sqrt(exp_avg_sq) for every local parameter (4 B each) during the step.
  MemoryInputs in = llama_7b(0, Precision::bf16);
  in.layout.framework = Framework::megatron;
  EXPECT_NEAR(gradients(in), kParams * 4, 1.0);
  EXPECT_NEAR(step_copies(in), kParams * 4, 1e3);
}

}  // namespace deepspeed_gradient_memory_test
}  // namespace gpuplan
