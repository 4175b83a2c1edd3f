// step_time_lower_bound_s: the linear-layer FLOP floor by hand, and never above estimate_step over many sampled
// layouts of dense and MoE models on several systems.
#include <gtest/gtest.h>

#include <random>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan {
namespace {

TEST(StepTimeLowerBound, LinearLayerFlopsByHand) {
  // GPT (h = 2304, 24 layers): 12 h^2 weights per layer, 2 FLOPs each per token forward; with full recompute the
  // forward runs twice and the backward costs two forwards: 96 h^2 per token per layer.
  EstimateInputs in;
  in.memory.model = model_from_catalog("megatron-gpt-1.7b");
  in.memory.training.seq_len = 2048;
  in.memory.training.micro_batch = 4;
  in.memory.training.global_batch = 64;
  in.memory.training.precision = Precision::fp16;
  in.memory.layout.tp = 2;
  in.memory.layout.pp = 2;
  in.memory.layout.dp = 2;
  in.memory.layout.recompute = Recompute::full;
  in.memory.overheads = default_overheads();
  const Cluster c = make_cluster("dgx-a100", 1);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(c);
  const double h = 2304, layers_per_stage = 12, tokens_per_replica = 64.0 / 2 * 2048;
  const double flops = 96 * h * h * layers_per_stage * tokens_per_replica / 2;  // / tp
  const double rate = 312e12 * perf_constants(in.gpu).gemm_max_efficiency;                   // A100 dense fp16 peak
  EXPECT_NEAR(step_time_lower_bound_s(in), flops / rate, 1e-9 * flops / rate);
  EXPECT_LE(step_time_lower_bound_s(in), estimate_step(in).step_s);
}

TEST(StepTimeLowerBound, NeverAboveTheEstimate) {
  const char* models[] = {"gpt2",          "megatron-gpt-7.5b", "llama-3.1-8b",
                          "llama-3.1-70b", "mixtral-8x7b",      "qwen3-30b-a3b"};
  const char* systems[] = {"dgx-a100", "dgx-h100", "dgx-1-v100", "gb200-nvl72"};
  std::vector<EstimateInputs> bases;
  for (const char* sys : systems)
    for (const char* model : models) {
      EstimateInputs in;
      in.memory.model = model_from_catalog(model);
      in.memory.overheads = default_overheads();
      const Cluster c = make_cluster(sys, 8);
      in.gpu = c.gpu;
      in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
      in.fabric = fabric_from_cluster(c);
      bases.push_back(in);
    }
  std::mt19937 rng(12345);
  auto pick = [&](std::initializer_list<std::int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng));
  };
  int valid = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    EstimateInputs in = bases[std::uniform_int_distribution<std::size_t>(0, bases.size() - 1)(rng)];
    TrainingConfig& t = in.memory.training;
    Layout& l = in.memory.layout;
    t.seq_len = pick({1024, 2048, 4096});
    t.micro_batch = pick({1, 2, 4});
    t.precision = static_cast<Precision>(pick({static_cast<std::int64_t>(Precision::bf16),
                                               static_cast<std::int64_t>(Precision::fp16),
                                               static_cast<std::int64_t>(Precision::fp8)}));
    t.dropout = pick({0, 1}) * 0.1;
    l.tp = pick({1, 2, 4, 8});
    l.pp = pick({1, 2, 4});
    l.cp = pick({1, 1, 2});
    l.dp = pick({1, 2, 4});
    l.vpp = l.pp > 1 ? pick({1, 2}) : 1;
    l.ep = in.memory.model->is_moe() ? pick({1, 2, 4, 8}) : 1;
    l.zero = static_cast<int>(pick({0, 1, 2, 3}));
    l.sequence_parallel = pick({0, 1}) == 1;
    l.recompute = static_cast<Recompute>(pick({static_cast<std::int64_t>(Recompute::none),
                                               static_cast<std::int64_t>(Recompute::selective),
                                               static_cast<std::int64_t>(Recompute::full)}));
    l.recompute_layers = l.recompute == Recompute::full ? pick({-1, -1, 1}) : -1;
    l.attention = pick({0, 1}) == 1 ? Attention::flash : Attention::eager;
    l.offload = l.zero >= 1 && pick({0, 0, 0, 1}) == 1 ? Offload::optimizer : Offload::none;
    t.global_batch = t.micro_batch * l.dp * pick({1, 4, 16, 64});
    in.time.tp_overlap = pick({0, 1}) == 1;
    in.time.dp_overlap = pick({0, 1}) == 1;
    in.time.order = pick({0, 1}) == 1 ? "tp-cp-ep-dp-pp" : "tp-cp-ep-pp-dp";
    double step = 0;
    try {
      step = estimate_step(in).step_s;
    } catch (const InputError&) {
      continue;  // layout the model or cluster does not allow
    }
    ++valid;
    const double bound = step_time_lower_bound_s(in);
    EXPECT_GT(bound, 0) << trial;
    EXPECT_LE(bound, step) << "trial " << trial << " model " << in.memory.model->name << " tp " << l.tp << " pp "
                           << l.pp << " cp " << l.cp << " dp " << l.dp << " vpp " << l.vpp << " ep " << l.ep;
  }
  EXPECT_GT(valid, 500);
}

}  // namespace
}  // namespace gpuplan
