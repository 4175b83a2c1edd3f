// The search's step models share the per-layer compute of layouts with the same TP, CP, micro-batch, sequence
// parallelism, EP and ETP, and the stage contents of layouts with the same TP, PP, VPP, EP, ETP and split
// (StepModel::ComputeMemo). Every step time priced through a shared memo must be exactly estimate_step's for the
// same layout, priced from scratch.
#include <gtest/gtest.h>

#include <vector>

#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/step_model.hpp"

namespace gpuplan {
namespace {

struct MemoDegrees {
  std::int64_t tp, cp, pp, vpp, ep, etp, micro_batch;
  bool sequence_parallel;
};

EstimateInputs mixtral_on_32_h100(const MemoDegrees& d) {
  EstimateInputs in;
  in.memory.model = model_from_catalog("mixtral-8x7b");
  in.memory.training.seq_len = 4096;
  in.memory.training.micro_batch = d.micro_batch;
  in.memory.training.global_batch = 256;
  in.memory.overheads = default_overheads();
  Layout& l = in.memory.layout;
  l.gpus = 32;
  l.tp = d.tp;
  l.cp = d.cp;
  l.pp = d.pp;
  l.vpp = d.vpp;
  l.schedule = d.vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
  l.ep = d.ep;
  l.etp = d.etp;
  l.dp = 32 / (d.tp * d.cp * d.pp);
  l.sequence_parallel = d.sequence_parallel;
  l.zero = 1;
  l.recompute = Recompute::selective;
  const Cluster c = make_cluster("dgx-h100", 4);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(c);
  return in;
}

TEST(StepModelMemo, SharedComputeGivesEstimateStepExactly) {
  // Pairs that share the compute key (same tp, cp, micro-batch, sp, ep, etp) but differ in pipeline and data
  // parallelism, and layouts that differ from them in one of the key's degrees.
  const std::vector<MemoDegrees> layouts = {
      {2, 1, 1, 1, 8, 1, 1, true},  {2, 1, 2, 1, 8, 1, 1, true},  {2, 1, 4, 2, 8, 1, 1, true},
      {2, 1, 4, 1, 8, 1, 1, false}, {2, 1, 2, 1, 4, 1, 1, true},  {2, 1, 2, 1, 4, 2, 1, true},
      {2, 2, 2, 1, 8, 1, 1, true},  {2, 2, 1, 1, 8, 1, 1, true},  {4, 1, 2, 1, 8, 1, 2, true},
      {4, 1, 1, 1, 8, 1, 2, true},  {1, 1, 4, 1, 8, 1, 2, false}, {1, 1, 8, 1, 4, 1, 2, false},
  };
  perf::StepModel::ComputeMemo memo;
  for (const MemoDegrees& d : layouts) {
    const EstimateInputs in = mixtral_on_32_h100(d);
    const perf::StepJob job(in);
    const perf::StepModel shared(in, job, &memo);
    const StepEstimate from_memo = shared.time(resolve_layout(in.memory));
    const StepEstimate fresh = estimate_step(in);
    EXPECT_EQ(from_memo.step_s, fresh.step_s) << "tp " << d.tp << " pp " << d.pp << " ep " << d.ep;
    ASSERT_EQ(from_memo.breakdown.size(), fresh.breakdown.size());
    for (std::size_t i = 0; i < fresh.breakdown.size(); ++i)
      EXPECT_EQ(from_memo.breakdown[i].seconds, fresh.breakdown[i].seconds) << fresh.breakdown[i].name;
  }
  // Eight distinct keys among the twelve layouts: the pairs were priced once.
  EXPECT_EQ(memo.size(), 8u);
}

TEST(StepModelMemo, OneDeepSpeedModelTimesEveryZeroStageAsEstimateStep) {
  // The search times every ZeRO stage of a shape on one step model. DeepSpeed's gradients are fp32 at ZeRO-0 and
  // bf16 above it under bf16 (gradient_dtype), so a model built at one stage must still price the others as
  // estimate_step prices them from scratch.
  EstimateInputs in = mixtral_on_32_h100({2, 1, 1, 1, 8, 1, 1, false});
  in.memory.layout.framework = Framework::deepspeed;
  in.memory.layout.impl = Impl::hf;
  in.memory.layout.recompute = Recompute::none;
  for (int built = 0; built <= 3; ++built) {
    in.memory.layout.zero = built;
    const perf::StepJob job(in);
    const perf::StepModel model(in, job);
    for (int zero = 0; zero <= 3; ++zero) {
      EstimateInputs other = in;
      other.memory.layout.zero = zero;
      EXPECT_EQ(model.time(resolve_layout(other.memory)).step_s, estimate_step(other).step_s)
          << "built at ZeRO-" << built << ", timed at ZeRO-" << zero;
    }
  }
}

}  // namespace
}  // namespace gpuplan
