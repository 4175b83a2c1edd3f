// fp8 training as Transformer Engine runs it: the decoder layers' linears in fp8 at the measured fp8 GEMM rate, each
// input and output gradient quantized (row- and column-wise) around them, and the attention core, output layer and
// router left in bf16 (fp8_dpa off; not Transformer Engine modules). Expected values are derived here from the
// published measurements and the GPUs' datasheet peaks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/layer_comm.hpp"
#include "perf/layer_cost.hpp"

using namespace gpuplan;

namespace {

const GpuSpec& h100() { return HardwareCatalog::builtin().gpu("h100-sxm-80gb"); }

perf::MicrobatchShape shape(double gemm_bytes) {
  perf::MicrobatchShape s;
  s.micro_batch = 1;
  s.tokens = s.local_sequence = s.keys_per_query = s.attention_keys_per_call = 8192;
  s.element_bytes = 2;
  s.gemm_element_bytes = gemm_bytes;
  return s;
}

}  // namespace

TEST(Fp8, HopperGemmsAtTheMeasuredFp8Rate) {
  // Azure ND H200 v5 (same GH100 die and peak as the H100 SXM): cuBLASLt FP8 8192^3 at 1269.4 of 1979 TFLOP/s.
  const PerfConstants pc = perf_constants(h100());
  EXPECT_NEAR(pc.fp8_gemm_max_efficiency, 1269.4 / 1979, 0.001);
  const perf::Machine mc{1978.9e12, 3350e9, &pc, 989.4e12};
  const double n = 8192, flops = 2 * n * n * n;
  // 8192 x 8192 tiles of 128 x 128 on 132 SMs: 4096 tiles in 32 waves, 0.97 of the last wave busy.
  const double waves = std::ceil(4096.0 / 132), utilization = 4096 / (waves * 132);
  const double compute = flops / (1978.9e12 * pc.fp8_gemm_max_efficiency * utilization);
  const double t = perf::gemm_s(mc, n, n, n, 1, 1.0);
  EXPECT_GT(t, compute);            // the roofline adds the operand traffic, a little
  EXPECT_LT(t, 1.02 * compute + pc.kernel_overhead_s);
}

TEST(Fp8, AttentionCoreStaysInBf16) {
  const PerfConstants pc = perf_constants(h100());
  ModelConfig m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  const perf::Machine fp8{1978.9e12, 3350e9, &pc, 989.4e12};
  const perf::Machine bf16{989.4e12, 3350e9, &pc, 989.4e12};
  const perf::Cost in_fp8 = perf::attention_core(fp8, m, shape(1));
  const perf::Cost in_bf16 = perf::attention_core(bf16, m, shape(2));
  EXPECT_DOUBLE_EQ(in_fp8.forward_s, in_bf16.forward_s);
  EXPECT_DOUBLE_EQ(in_fp8.backward_s, in_bf16.backward_s);
}

TEST(Fp8, LinearQuantizesItsInputAndOutputGradient) {
  // One linear of 8192 tokens x 4096 -> 14336: forward casts the 8192 x 4096 input, backward the 8192 x 14336
  // output gradient, each read in bf16 (2 B) and written in fp8 twice (1 B row-wise, 1 B column-wise).
  const PerfConstants pc = perf_constants(h100());
  const perf::Machine mc{1978.9e12, 3350e9, &pc, 989.4e12};
  const perf::MicrobatchShape s = shape(1);
  const double tokens = 8192, in = 4096, out = 14336;
  const perf::Cost c = perf::linear(mc, s, tokens, out, in, 1);
  const double gemm_forward = perf::gemm_s(mc, tokens, out, in, 1, 1.0);
  const double rate = 3350e9 * pc.memory_bound_efficiency;
  EXPECT_NEAR(c.forward_s - gemm_forward, 4 * tokens * in / rate + pc.kernel_overhead_s, 1e-9);
  const double split = pc.fp8_split_accumulation_slowdown;
  const double gemm_backward = perf::gemm_s(mc, tokens, in, out, 1, 1.0, 1.0, split) +
                               perf::gemm_s(mc, in, out, tokens, 1, 1.0, s.gradient_rw_bytes, split);
  EXPECT_NEAR(c.backward_s - gemm_backward, 4 * tokens * out / rate + pc.kernel_overhead_s, 1e-9);
}

TEST(Fp8, DynamicScalingReadsEachTensorOnceMoreForItsAmax) {
  // torchao's tensorwise dynamic scaling (torchtitan's float8) takes torch.max(torch.abs(x)) of the bf16 tensor
  // before casting it (torchao/float8/float8_utils.py, tensor_to_amax): 2 B more per element and a reduction
  // kernel of its own, beside the cast's 2 B read and two 1 B writes. Same linear as above.
  const PerfConstants pc = perf_constants(h100());
  const perf::Machine mc{1978.9e12, 3350e9, &pc, 989.4e12};
  perf::MicrobatchShape s = shape(1);
  s.fp8_amax_pass = true;
  const double tokens = 8192, in = 4096, out = 14336;
  const perf::Cost c = perf::linear(mc, s, tokens, out, in, 1);
  const double rate = 3350e9 * pc.memory_bound_efficiency;
  const double gemm_forward = perf::gemm_s(mc, tokens, out, in, 1, 1.0);
  EXPECT_NEAR(c.forward_s - gemm_forward, 6 * tokens * in / rate + 2 * pc.kernel_overhead_s, 1e-9);
  const perf::Cost delayed = perf::linear(mc, shape(1), tokens, out, in, 1);
  EXPECT_NEAR(c.backward_s - delayed.backward_s, 2 * tokens * out / rate + pc.kernel_overhead_s, 1e-9);
}

TEST(Fp8, OnlyTorchtitanScalesDynamically) {
  // Megatron-LM and NeMo run Transformer Engine's delayed scaling (the amax from its history); torchtitan runs
  // torchao's dynamic scaling; without fp8 there is nothing to scale.
  EstimateInputs in;
  in.memory.model = model_from_catalog("llama-3.1-8b");
  in.memory.training.precision = Precision::fp8;
  in.gpu = h100();
  Layout l;
  l.framework = Framework::megatron;
  EXPECT_FALSE(perf::microbatch_shape(in, l).fp8_amax_pass);
  l.framework = Framework::torchtitan;
  EXPECT_TRUE(perf::microbatch_shape(in, l).fp8_amax_pass);
  in.memory.training.precision = Precision::bf16;
  EXPECT_FALSE(perf::microbatch_shape(in, l).fp8_amax_pass);
}

TEST(Fp8, HopperGradientGemmsPayForTheSplitAccumulator) {
  // Transformer Engine runs the input- and weight-gradient GEMMs with the split accumulator (_2X_ACC_DGRAD,
  // _2X_ACC_WGRAD), measured 1.1-1.2x slower than fast accumulation (pytorch/ao #2377); the measured fp8 rate is
  // the fast one (SuperBench sets CUBLASLT_MATMUL_DESC_FAST_ACCUM). One linear, 8192 tokens x 4096 -> 14336.
  const PerfConstants pc = perf_constants(h100());
  EXPECT_DOUBLE_EQ(pc.fp8_split_accumulation_slowdown, 1.15);
  const perf::Machine mc{1978.9e12, 3350e9, &pc, 989.4e12};
  const double tokens = 8192, in = 4096, out = 14336, flops = 2 * tokens * in * out;
  // Input gradient 8192 x 4096 outputs: 64 x 32 = 2048 tiles in 16 waves of 132; weight gradient 4096 x 14336:
  // 32 x 112 = 3584 tiles in 28 waves. Both keep 0.9697 of the SMs busy.
  const double busy = 2048.0 / (16 * 132);
  EXPECT_NEAR(busy, 3584.0 / (28 * 132), 1e-12);
  const double fast_math = 2 * flops / (1978.9e12 * pc.fp8_gemm_max_efficiency * busy);
  const double quantize = 4 * tokens * out / (3350e9 * pc.memory_bound_efficiency) + pc.kernel_overhead_s;
  const double gemms = perf::linear(mc, shape(1), tokens, out, in, 1).backward_s - quantize;
  EXPECT_GT(gemms, 1.15 * fast_math);   // the roofline's operand traffic adds a little on top
  EXPECT_LT(gemms, 1.15 * fast_math * 1.02 + 2 * pc.kernel_overhead_s);
  // The forward keeps fast accumulation.
  const double forward_math = flops / (1978.9e12 * pc.fp8_gemm_max_efficiency * busy);
  EXPECT_LT(perf::gemm_s(mc, tokens, out, in, 1, 1.0), 1.02 * forward_math + pc.kernel_overhead_s);
}

TEST(Fp8, BlackwellHasNoFastAccumulationToLeave) {
  // sm100's fp8 MMA has no fast-accumulation mode (NVIDIA/TransformerEngine #2748): one rate for all three GEMMs.
  EXPECT_DOUBLE_EQ(perf_constants(HardwareCatalog::builtin().gpu("b200")).fp8_split_accumulation_slowdown, 1.0);
  EXPECT_DOUBLE_EQ(perf_constants(HardwareCatalog::builtin().gpu("gb200")).fp8_split_accumulation_slowdown, 1.0);
}

TEST(Fp8, EstimatesNameTheFp8GemmSource) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.global_batch = 8;
  r.training.precision = "fp8";
  const std::string source = api::run(r).cluster.gemm_efficiency_source;
  EXPECT_EQ(source.rfind("fp8 GEMMs: fp8_gemm_max_efficiency", 0), 0U) << source;
  EXPECT_NE(source.find("Azure"), std::string::npos);
  EXPECT_NE(source.find("split accumulator"), std::string::npos) << source;
  // The A100 has no fp8: its runs fall back to bf16 and say nothing of fp8.
  r.cluster.system = "dgx-a100";
  EXPECT_EQ(api::run(r).cluster.gemm_efficiency_source.find("fp8"), std::string::npos);
}
