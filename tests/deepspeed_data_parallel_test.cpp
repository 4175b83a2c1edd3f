// DeepSpeed's gradient reduction below ZeRO-3 (deepspeed/runtime/zero/stage_1_and_2.py with zero/config.py's
// defaults): each gradient is copied into a bucket of reduce_bucket_size (5e8) elements, the bucket is divided in
// place, flattened again and all-reduced over the data-parallel ranks (use_multi_rank_bucket_allreduce), and each
// rank copies back the slices it owns. ZeRO-2 does it in every microbatch's backward, ZeRO-1 once per step. The
// expected times are derived here from the exact parameter count, the H100's HBM bandwidth, the published
// constants and the collective model's all-reduce, not taken from the step's output.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpuplan/comm.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace deepspeed_data_parallel_test {

// Llama-2-7B: 6,738,415,616 parameters (the Hugging Face checkpoint's count), 32 layers of 2 norms, 4 attention
// projections and 3 MLP matrices, plus the embedding and the output layer: 290 weight tensors.
constexpr double kParams = 6'738'415'616.0, kTensors = 32 * 9 + 2;
constexpr double kDefaultBucket = 5e8, kBf16 = 2, kDp = 8;   // zero/config.py: reduce_bucket_size 5e8
// H100 SXM: 3.35 TB/s HBM3 (datasheet); data/perf.json defaults: memory_bound_efficiency 0.8, 5 us per kernel.
constexpr double kHbmBps = 3.35e12 * 0.8, kKernelS = 5e-6;

EstimateInputs llama_7b(int zero, std::int64_t microbatches) {
  EstimateInputs in;
  in.memory.model = model_from_catalog("llama-2-7b");
  in.memory.training.seq_len = 4096;
  in.memory.training.global_batch = 8 * microbatches;
  in.memory.layout.gpus = 8;
  in.memory.layout.framework = Framework::deepspeed;
  in.memory.layout.impl = Impl::hf;
  in.memory.layout.zero = zero;
  in.memory.overheads = default_overheads();
  const Cluster c = make_cluster("dgx-h100", 1);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(c);
  in.time.dp_overlap = false;   // zero_optimization.overlap_comm's default below ZeRO-3
  return in;
}

double dp_comm(const EstimateInputs& in) {
  for (const auto& [name, seconds] : estimate_step(in).breakdown)
    if (name == "dp_comm") return seconds;
  ADD_FAILURE() << "no dp_comm term";
  return 0;
}

// What the reduction stream runs per reduction (the compute stream without overlap_comm): the all-reduces of the
// full buckets (13 of the default 5e8 elements) and of the rest, the in-place division, the flattening copy and the
// owned slices copied back.
double reduction_s(const EstimateInputs& in, double bucket = kDefaultBucket) {
  const RankPlacement placement = place_ranks(resolve_layout(in.memory), 8, parse_order("tp-cp-ep-dp-pp"));
  const double call_s = perf_constants(in.gpu).collective_call_s;
  auto all_reduce = [&](double elements) {
    return call_s + collective_time_s(in.fabric, Collective::allreduce, elements * kBf16, placement.dp);
  };
  const double full_buckets = std::floor(kParams / bucket);
  const double reduce = full_buckets * all_reduce(bucket) + all_reduce(kParams - full_buckets * bucket);
  const double buckets = std::ceil(kParams / bucket);
  return reduce + (4 * kBf16 * kParams + 2 * kBf16 * kParams / kDp) / kHbmBps + 3 * buckets * kKernelS;
}

// The copies of the gradients into the buckets, on the compute stream.
constexpr double kIntoBucketsS = 2 * kBf16 * kParams / kHbmBps + kTensors * kKernelS;

// Without overlap_comm everything runs on the compute stream: ZeRO-2 pays a reduction per microbatch, ZeRO-1 one
// per step, so four microbatches differ by three reductions.
TEST(DeepSpeedDataParallel, ZeroTwoReducesEveryMicrobatchWithAllReduces) {
  const EstimateInputs zero2 = llama_7b(2, 4), zero1 = llama_7b(1, 4);
  const double expected = 3 * (reduction_s(zero2) + kIntoBucketsS);
  EXPECT_NEAR(dp_comm(zero2) - dp_comm(zero1), expected, 1e-6 * expected);
}

// With overlap_comm the bucket copies stay on the compute stream and the last bucket's reduction waits; the rest
// hides behind the backward (far longer here) and slows it by overlap_slowdown of its time.
TEST(DeepSpeedDataParallel, OverlapCommHidesAllButTheLastBucket) {
  const EstimateInputs plain = llama_7b(2, 4);
  EstimateInputs overlapped = plain;
  overlapped.time.dp_overlap = true;
  const double hidden_share = 1 - kDefaultBucket / kParams;
  const double slowdown = perf_constants(plain.gpu).overlap_slowdown;
  const double expected = 4 * reduction_s(plain) * hidden_share * (1 - slowdown);
  EXPECT_NEAR(dp_comm(plain) - dp_comm(overlapped), expected, 1e-6 * expected);
}

// A ds_config's reduce_bucket_size replaces the default: the Megatron-GPT2 example's 7e6 elements
// (tests/data/frameworks/deepspeed/megatron_gpt2_ds_config_func_bs8_zero2_offload.json) cut 6,738,415,616
// parameters into 963 buckets, each all-reduced and divided with kernels of its own.
TEST(DeepSpeedDataParallel, TheConfiguredBucketSizeSetsTheBuckets) {
  constexpr double kConfigBucket = 7e6;
  EstimateInputs zero2 = llama_7b(2, 4), zero1 = llama_7b(1, 4);
  zero2.memory.overheads.zero_reduce_bucket_elements = kConfigBucket;
  zero1.memory.overheads.zero_reduce_bucket_elements = kConfigBucket;
  const double expected = 3 * (reduction_s(zero2, kConfigBucket) + kIntoBucketsS);
  EXPECT_NEAR(dp_comm(zero2) - dp_comm(zero1), expected, 1e-6 * expected);
}

// Without ZeRO DeepSpeed's engine all-reduces after the last backward (buffered_allreduce_fallback), with or without
// overlap_comm. Under bf16 it keeps the gradients in fp32 (engine.py get_data_types: grad_accum_dtype fp32 without
// ZeRO, the BF16_Optimizer's get_grads_for_reduction) and all-reduces them in its communication_data_type, bf16
// (allreduce_bucket casts the flat buffer down and copies the result back). Per parameter: flattening 4 + 4 bytes,
// the cast 4 + 2, the scaling after the all-reduce 2 + 2, the copy back 2 + 4 and the per-tensor copy 4 + 4: 32
// bytes, in 4 x 14 buffer kernels and 290 per-tensor copies; the all-reduce moves 2 bytes per parameter. Before
// that, each of the 4 microbatches' backward ends with the BF16_Optimizer adding the bf16 gradients into the fp32
// ones (bf16_optimizer.py _update_hp_grad, hp_grad.add_(lp.grad.to(fp32))): 2 + 4 bytes to cast, 4 + 4 + 4 to add,
// two kernels per tensor.
TEST(DeepSpeedDataParallel, ZeroZeroAllReducesAfterTheBackwardWhateverOverlapSays) {
  EstimateInputs in = llama_7b(0, 4);
  in.time.dp_overlap = true;
  const RankPlacement placement = place_ranks(resolve_layout(in.memory), 8, parse_order("tp-cp-ep-dp-pp"));
  const double all_reduce = perf_constants(in.gpu).collective_call_s +
                            collective_time_s(in.fabric, Collective::allreduce, kParams * kBf16, placement.dp);
  const double accumulate = 4 * ((2 + 4 + 4 + 4 + 4) * kParams / kHbmBps + 2 * kTensors * kKernelS);
  const double copies = (8 + 6 + 4 + 6 + 8) * kParams / kHbmBps + (4 * 14 + kTensors) * kKernelS + accumulate;
  EXPECT_NEAR(dp_comm(in), all_reduce + copies, 1e-6 * (all_reduce + copies));
  in.time.dp_overlap = false;
  EXPECT_NEAR(dp_comm(in), all_reduce + copies, 1e-6 * (all_reduce + copies));
}

// ZeRO-3 reduces the gradients in the communication dtype too (stage3.py casts each bucket's gradients to
// communication_data_type before reducing them), bf16 under bf16 training whatever dtype they accumulate in: the
// same collective time with fp32 or bf16 gradients.
TEST(DeepSpeedDataParallel, ZeroThreeReducesInTheCommunicationDtype) {
  EstimateInputs in = llama_7b(3, 4);
  in.memory.training.grad_dtype = DType::fp32;
  const double fp32_gradients = test::step_term(estimate_step(in), "zero3_comm");
  in.memory.training.grad_dtype = DType::bf16;
  EXPECT_DOUBLE_EQ(fp32_gradients, test::step_term(estimate_step(in), "zero3_comm"));
}

// The optimizer step over 16-bit gradients (stage_1_and_2.py step; fp16/fused_optimizer.py step). Per parameter of
// the shard: the published 38 bytes of the mixed-precision Adam step (data/perf.json optimizer_bytes_per_param,
// with a 4-byte norm read), less 2 because DeepSpeed takes the norm over the bf16 gradients, plus the flattening
// copy (2 + 2) and the cast to fp32 (2 + 4): 46 bytes, and no zeroing (the gradients are freed). Without ZeRO in
// fp16 the FP16_Optimizer casts every gradient (2 + 4) and flattens the casts (4 + 4): 52 bytes per parameter.
// Both then multiply the fp32 gradients by 1 / (loss scale x clip) in place (unscale_and_clip_grads: mul_, 4 + 4),
// ZeRO whatever the precision, the FP16_Optimizer under fp16: 54 and 60 bytes. Twelve kernels: the nine of the
// step, the two copies and the multiplication.
TEST(DeepSpeedDataParallel, TheStepCastsSixteenBitGradientsAndDoesNotZeroThem) {
  const double zero1 = test::step_term(estimate_step(llama_7b(1, 4)), "optimizer");
  EXPECT_NEAR(zero1, kParams / kDp * 54 / kHbmBps + 12 * kKernelS, 1e-9);
  EstimateInputs fp16 = llama_7b(0, 4);
  fp16.memory.training.precision = Precision::fp16;
  const double zero0 = test::step_term(estimate_step(fp16), "optimizer");
  EXPECT_NEAR(zero0, kParams * 60 / kHbmBps + 12 * kKernelS, 1e-9);
}

}  // namespace deepspeed_data_parallel_test
}  // namespace gpuplan
