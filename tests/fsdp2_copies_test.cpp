// FSDP2 (torchtitan's sharded data parallelism) copies parameters and gradients around its collectives on the
// compute stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): after each all-gather,
// split_with_sizes_copy reads the gathered bf16 parameters and writes them into the unsharded parameters; before
// each reduce-scatter, chunk_cat reads the bf16 gradients and writes them into the buffer in the reduce dtype (here
// bf16, so that both frameworks reduce the same bytes).
// One kernel per block each. The expected times are derived here from the exact parameter count, the H100's HBM
// bandwidth and the published constants, not taken from gpuplan's output.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "gpuplan/api.hpp"
#include "test_support.hpp"

namespace api = gpuplan::api;

namespace fsdp2_copies_test {

// Llama-3.1-8B: 8,030,261,248 parameters (the Hugging Face checkpoint's count), 32 blocks.
constexpr double kParams = 8'030'261'248.0, kBlocks = 32;
// H100 SXM: 3.35 TB/s HBM3 (datasheet); data/perf.json defaults: memory_bound_efficiency 0.8, 5 us per kernel.
constexpr double kHbmBps = 3.35e12 * 0.8, kKernelS = 5e-6;

api::EstimateRequest llama_8b(const std::string& framework, std::int64_t microbatches) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.framework = framework;
  r.training.seq_len = 4096;
  r.training.global_batch = 8 * microbatches;
  r.training.grad_dtype = "bf16";   // torchtitan's mixed_precision_reduce bf16, DeepSpeed's communication dtype
  r.layout.zero = 3;
  r.layout.impl = "hf";
  return r;
}

using gpuplan::test::time_term;

// The same ZeRO-3 job on the same modules under DeepSpeed and under torchtitan: its collectives cost the same, and
// torchtitan adds FSDP2's copies, twice a gather (forward and backward) and once a reduce-scatter per microbatch.
// DeepSpeed's reduce bucket is set to one block's share of the parameters, so that its last bucket's reduce-scatter,
// which waits after the backward, is as long as FSDP2's last unit's.
TEST(Fsdp2Copies, EveryGatherAndReduceScatterCopiesOnTheComputeStream) {
  const double copy_out = 2 * 2 * kParams / kHbmBps + kBlocks * kKernelS;    // bf16 read, bf16 write
  const double copy_in = (2 + 2) * kParams / kHbmBps + kBlocks * kKernelS;   // bf16 read, bf16 write
  for (const std::int64_t microbatches : {1, 4}) {
    const double torchtitan = time_term(api::run(llama_8b("torchtitan", microbatches)), "zero3_comm");
    api::EstimateRequest deepspeed_job = llama_8b("deepspeed", microbatches);
    deepspeed_job.training.reduce_bucket_size = kParams / kBlocks;
    const double deepspeed = time_term(api::run(deepspeed_job), "zero3_comm");
    const double expected = static_cast<double>(microbatches) * (2 * copy_out + copy_in);
    EXPECT_NEAR(torchtitan - deepspeed, expected, 1e-6 * expected) << microbatches << " microbatches";
  }
}

// With fsdp_reshard_after_forward "never" (--zero 2) the parameters are gathered and the gradients reduced once per
// step, as the collectives are priced: one copy each.
TEST(Fsdp2Copies, ZeroTwoCopiesOncePerStep) {
  api::EstimateRequest torchtitan = llama_8b("torchtitan", 4), deepspeed = llama_8b("deepspeed", 4);
  torchtitan.layout.zero = deepspeed.layout.zero = 2;
  const double copies = (2 * 2 + 2 + 2) * kParams / kHbmBps + 2 * kBlocks * kKernelS;
  const double torchtitan_s = time_term(api::run(torchtitan), "zero3_comm");
  EXPECT_NEAR(torchtitan_s - time_term(api::run(deepspeed), "zero3_comm"), copies, 1e-6 * copies);
}

}  // namespace fsdp2_copies_test
