// The gradients of the weights sequence parallelism leaves whole on every TP rank (norms, routers, MLA's down
// projections): each rank sees only its share of the sequence, so Megatron-LM's finalize_model_grads
// (_allreduce_non_tensor_model_parallel_grads) flattens them, all-reduces them over the TP group and copies them
// back once per step. Counted here by hand from DeepSeek-V3's Hugging Face config.
#include <gtest/gtest.h>

#include "gpuplan/comm.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

// DeepSeek-V3 cut to 4 layers (first_k_dense_replace 3: three dense layers, then one MoE layer) on one 8x H100 node.
EstimateInputs deepseek_v3_four_layers(int tp, bool sequence_parallel) {
  EstimateInputs in;
  in.memory.model = model_from_catalog("deepseek-v3");
  in.memory.model->layers = 4;
  in.memory.training.seq_len = 4096;
  in.memory.training.micro_batch = 1;
  in.memory.training.global_batch = 8 / tp;
  in.memory.layout.gpus = 8;
  in.memory.layout.tp = tp;
  in.memory.layout.ep = 8 / tp;
  in.memory.layout.sequence_parallel = sequence_parallel;
  in.memory.overheads = default_overheads();
  test::place_on(in, "dgx-h100", 1);
  return in;
}

double term_s(const StepEstimate& step, std::string_view name) {
  for (const TimeTerm& t : step.breakdown)
    if (t.name == name) return t.seconds;
  ADD_FAILURE() << "no term " << name;
  return 0;
}

TEST(SequenceParallelGradientSync, AllReducesTheDuplicatedWeightsOncePerStep) {
  const EstimateInputs in = deepseek_v3_four_layers(8, true);
  const PerfConstants pc = perf_constants(in.gpu);
  // Per layer, hidden 7168: two RMSNorms (2 x 7168) and the q and kv latent norms (1536 + 512); the q and kv down
  // projections, 7168 x 1536 and 7168 x (512 + 64). The MoE layer adds its router, 256 experts x 7168. The last
  // stage adds the final norm (7168).
  const double dense_layer = 2 * 7168 + 1536 + 512 + 7168.0 * (1536 + 512 + 64);
  const double moe_layer = dense_layer + 256 * 7168.0;
  const double elements = 3 * dense_layer + moe_layer + 7168;
  const double bytes = 4 * elements;   // fp32 main gradients
  const GroupPlacement tp{8, 8, 1};
  const double all_reduce = collective_time_s(in.fabric, Collective::allreduce, bytes, tp) + pc.collective_call_s;
  // Flatten and unflatten: a read and a write of the buffer each, two kernels.
  const double copies = 4 * bytes / (in.gpu.memory_GBps * 1e9 * pc.memory_bound_efficiency) + 2 * pc.kernel_overhead_s;
  // The router's expert score bias (256) is a buffer in Megatron-LM, not a parameter: within the tolerance.
  EXPECT_NEAR(term_s(estimate_step(in), "sp_grad_sync"), all_reduce + copies, 1e-4 * (all_reduce + copies));
}

TEST(SequenceParallelGradientSync, RowParallelBiasesAreDuplicatedToo) {
  // GPT-2 (hidden 768, 12 layers, LayerNorms with biases, biased linears) at TP 2: per layer two LayerNorms
  // (2 x (768 + 768)) and the biases of the two row-parallel linears, added after their reduce-scatter (768 each);
  // the final LayerNorm (768 + 768).
  EstimateInputs in;
  in.memory.model = model_from_catalog("gpt2");
  in.memory.training.seq_len = 1024;
  in.memory.training.micro_batch = 1;
  in.memory.training.global_batch = 4;
  in.memory.layout.gpus = 2;
  in.memory.layout.tp = 2;
  in.memory.layout.sequence_parallel = true;
  in.memory.overheads = default_overheads();
  test::place_on(in, "dgx-h100", 1);
  const PerfConstants pc = perf_constants(in.gpu);
  const double bytes = 4 * (12 * (2 * (768 + 768) + 2 * 768) + 2 * 768.0);
  const double expected = collective_time_s(in.fabric, Collective::allreduce, bytes, GroupPlacement{2, 2, 1}) +
                          pc.collective_call_s + 4 * bytes / (in.gpu.memory_GBps * 1e9 * pc.memory_bound_efficiency) +
                          2 * pc.kernel_overhead_s;
  EXPECT_NEAR(term_s(estimate_step(in), "sp_grad_sync"), expected, 1e-6 * expected);
}

TEST(SequenceParallelGradientSync, NothingWithoutSequenceParallelismOrTensorParallelism) {
  // Without sequence parallelism every TP rank sees the whole sequence and computes the same gradients.
  EXPECT_EQ(term_s(estimate_step(deepseek_v3_four_layers(8, false)), "sp_grad_sync"), 0.0);
  EXPECT_EQ(term_s(estimate_step(deepseek_v3_four_layers(1, false)), "sp_grad_sync"), 0.0);
}

}  // namespace
}  // namespace gpuplan
