// What the optimizer step holds beyond the weights, master copy and moments: the gradients it steps on and the
// temporaries its framework allocates around the update.
#include <algorithm>

#include "memory/internal.hpp"

namespace gpuplan::memory {

namespace {

constexpr const char* kDeepSpeedZero12 =
    "DeepSpeed runtime/zero/stage_1_and_2.py step: the partition's gradients flattened, then .to() fp32";
constexpr const char* kDeepSpeedZero3 =
    "DeepSpeed runtime/zero/stage3.py _prepare_fp32_grad_for_sub_group: one sub_group_size sub-group at a time";
constexpr const char* kDeepSpeedFp16 =
    "DeepSpeed runtime/fp16/fused_optimizer.py step: each gradient cast to fp32, then flattened";

// DeepSpeed's FusedAdam (the optimizer its config's Adam and AdamW name) updates in place, so what it adds is how
// its wrappers hand the 16-bit gradients to the fp32 master copy.
OptimizerStep deepspeed_step(const TrainingConfig& training, const OptimizerStepInputs& in) {
  const double element = gradient_element_bytes(training, Framework::deepspeed, in.zero);
  // .to(torch.float32) of an fp32 tensor returns the tensor itself.
  const double fp32_copy = element == 4.0 ? 0.0 : 4.0;
  if (in.zero == 0) {
    // FP16_Optimizer (16-bit gradients) holds every fp32 cast and their flattened copy at once; the
    // BF16_Optimizer steps on its fp32 gradient buffer in place.
    return {in.gradients, fp32_copy > 0 ? in.optimizer_params * 8.0 : 0.0, kDeepSpeedFp16};
  }
  if (in.zero <= 2) {
    // The gradients of other ranks' partitions are freed first; the flattened copy lives until its cast is made.
    return {in.optimizer_params * element, in.optimizer_params * (element + fp32_copy), kDeepSpeedZero12};
  }
  const double sub_group = std::min(in.sub_group_elements, in.optimizer_params);
  return {in.gradients, sub_group * (element + fp32_copy), kDeepSpeedZero3};
}

}  // namespace

bool deepspeed_bf16_optimizer(const TrainingConfig& training, const Layout& layout, int zero) {
  const bool bf16 = training.precision == Precision::bf16 || training.precision == Precision::fp8;
  return layout.framework == Framework::deepspeed && zero == 0 && bf16 &&
         gradient_dtype(training, layout.framework, zero) == DType::fp32;
}

bool deepspeed_gradient_buffer(const TrainingConfig& training, const Layout& layout, int zero) {
  // bf16_optimizer.py __init__ allocates fp32_groups_gradients_flat; stage3.py _setup_for_real_optimizer allocates
  // grad_partitions_flat_buffer.
  return deepspeed_bf16_optimizer(training, layout, zero) || (layout.framework == Framework::deepspeed && zero == 3);
}

OptimizerStep optimizer_step(const TrainingConfig& training, const Layout& layout, const OptimizerStepInputs& in) {
  if (in.offload != Offload::none) return {in.gradients, 0.0, ""};   // the step runs on the host
  if (layout.framework == Framework::deepspeed) return deepspeed_step(training, in);
  const bool adam_like = training.optimizer == Optimizer::adam || training.optimizer == Optimizer::adamw;
  // torch.optim's foreach Adam allocates sqrt(exp_avg_sq) for all parameters at once; Megatron-LM's fused Adam
  // does not.
  if (layout.impl == Impl::megatron || !adam_like) return {in.gradients, 0.0, ""};
  return {in.gradients, in.optimizer_params * 4.0, "torch.optim Adam (foreach): sqrt(exp_avg_sq) of every parameter"};
}

}  // namespace gpuplan::memory
