// The loss's passes over the logits by implementation (--loss), counted by hand from each one's source: Megatron-LM's
// vocab-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py), its fused variant
// (megatron/core/fusions/fused_cross_entropy.py) and Transformer Engine's Triton kernels
// (transformer_engine/pytorch/triton/cross_entropy.py). The step times of the implementations differ by exactly
// those bytes at the memory-bound rate, and by their kernel launches.
#include <gtest/gtest.h>

#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

// Llama-3.1-8B cut to 2 layers on one H100: one microbatch of 4096 tokens, the whole vocabulary on the GPU.
EstimateInputs one_gpu(Loss loss) {
  EstimateInputs in;
  in.memory.model = model_from_catalog("llama-3.1-8b");
  in.memory.model->layers = 2;
  in.memory.training.seq_len = 4096;
  in.memory.training.micro_batch = 1;
  in.memory.training.global_batch = 1;
  in.memory.training.loss = loss;
  in.memory.layout.gpus = 1;
  in.memory.overheads = default_overheads();
  test::place_on(in, "dgx-h100", 1);
  return in;
}

double step_s(Loss loss) { return estimate_step(one_gpu(loss)).step_s; }

TEST(CrossEntropyTime, EachImplementationMovesItsOwnPasses) {
  const EstimateInputs in = one_gpu(Loss::unfused);
  const PerfConstants pc = perf_constants(in.gpu);
  const double rate = in.gpu.memory_GBps * 1e9 * pc.memory_bound_efficiency;
  const double logits = 4096.0 * 128256;   // tokens x vocabulary, bf16 (2 B)
  // Unfused, bytes per logit: forward upcast 2 + 4, max 4, in-place subtract 4 + 4, exp 4 + 4, sum 4, in-place
  // divide 4 + 4 = 38 in 6 kernels; backward in-place scale 4 + 4 and the cast back 4 + 2 = 14 in 2.
  // Transformer Engine: forward reads the bf16 logits once (2, 1 kernel); backward reads them and writes the
  // gradient over them (4, 1 kernel).
  const double unfused_minus_te = (38 + 14 - 2 - 4) * logits / rate + (6 + 2 - 1 - 1) * pc.kernel_overhead_s;
  EXPECT_NEAR(step_s(Loss::unfused) - step_s(Loss::fused_te), unfused_minus_te, 1e-9 + 1e-6 * unfused_minus_te);
  // Megatron's fused kernels: the upcast with the max (2 + 4), subtract and exp in one (4 + 4), sum 4, divide 4 + 4
  // = 26 in 4 kernels forward; backward as unfused.
  const double unfused_minus_native = (38 - 26) * logits / rate + (6 - 4) * pc.kernel_overhead_s;
  EXPECT_NEAR(step_s(Loss::unfused) - step_s(Loss::fused_native), unfused_minus_native,
              1e-9 + 1e-6 * unfused_minus_native);
}

}  // namespace
}  // namespace gpuplan
