// What the ranked list of `plan` shows: distinct layouts (variants with the same time and memory are one plan that
// lists them), and "why #1 wins" against the best runner-up whatever the number of plans shown.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"

namespace api = gpuplan::api;

namespace {

// Llama-3.1-70B on one DGX H100 node: only ZeRO-3 or offloaded optimizer states fit, so offload to CPU and to
// NVMe are both candidates.
api::PlanRequest crowded(std::int64_t top) {
  api::PlanRequest r;
  r.model.name_or_path = "llama-3.1-70b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 4096;
  r.training.global_batch = 64;
  r.ranking.top = top;
  return r;
}

api::EstimateRequest estimate_of(const api::PlanLayout& l) {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-70b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 1;
  r.training.seq_len = 4096;
  r.training.global_batch = 64;
  r.training.micro_batch = l.micro_batch;
  r.layout.gpus = l.gpus;
  r.layout.tp = l.tp;
  r.layout.pp = l.pp;
  r.layout.vpp = l.vpp;
  r.layout.pp_schedule = l.pp_schedule;
  r.layout.cp = l.cp;
  r.layout.dp = l.dp;
  r.layout.zero = l.zero;
  r.layout.sequence_parallel = l.sequence_parallel;
  r.timing.tp_overlap = l.tp_overlap;
  r.layout.recompute = l.recompute;
  if (l.recompute_layers >= 0) r.layout.recompute_layers = l.recompute_layers;
  r.layout.offload = l.offload;
  r.layout.offload_target = l.offload_target;
  return r;
}

bool same_layout_but_zero_or_offload(const api::PlanLayout& a, const api::PlanLayout& b) {
  return a.tp == b.tp && a.pp == b.pp && a.vpp == b.vpp && a.cp == b.cp && a.ep == b.ep && a.dp == b.dp &&
         a.micro_batch == b.micro_batch && a.sequence_parallel == b.sequence_parallel &&
         a.tp_overlap == b.tp_overlap && a.recompute == b.recompute && a.recompute_layers == b.recompute_layers;
}

}  // namespace

TEST(PlanRanking, NoTwoPlansAreTheSameLayoutAtTheSameTimeAndMemory) {
  const api::PlanResult r = api::run(crowded(5));
  ASSERT_EQ(r.plans.size(), 5U);
  for (std::size_t i = 0; i < r.plans.size(); ++i)
    for (std::size_t j = i + 1; j < r.plans.size(); ++j) {
      const bool twins = same_layout_but_zero_or_offload(r.plans[i].layout, r.plans[j].layout) &&
                         r.plans[i].time.step_s == r.plans[j].time.step_s &&
                         r.plans[i].memory.per_gpu.total == r.plans[j].memory.per_gpu.total;
      EXPECT_FALSE(twins) << "#" << i + 1 << " and #" << j + 1 << " are one plan";
    }
}

TEST(PlanRanking, AnEquivalentEstimatesToTheSameTimeAndMemory) {
  // The first tie (ZeRO-1 with the optimizer offloaded to CPU or to NVMe) ranks fourth.
  const api::PlanResult r = api::run(crowded(5));
  const api::PlanReport* grouped = nullptr;
  for (const auto& p : r.plans)
    if (!p.equivalents.empty()) grouped = &p;
  ASSERT_NE(grouped, nullptr) << "offload to CPU and to NVMe were expected to tie on this job";
  for (const api::PlanLayout& e : grouped->equivalents) {
    EXPECT_TRUE(same_layout_but_zero_or_offload(grouped->layout, e));
    const api::EstimateResult alone = api::run(estimate_of(e));
    EXPECT_EQ(alone.time.step_s, grouped->time.step_s);
    EXPECT_EQ(alone.memory.per_gpu.total, grouped->memory.per_gpu.total);
  }
}

TEST(PlanRanking, WhyTheWinnerWinsNamesTheRunnerUpWithTopOne) {
  const api::PlanResult one = api::run(crowded(1));
  const api::PlanResult two = api::run(crowded(2));
  ASSERT_EQ(one.plans.size(), 1U);
  ASSERT_FALSE(one.why_winner.empty());
  EXPECT_EQ(one.why_winner, two.why_winner);
  EXPECT_EQ(one.why_winner[0].find("the only layout"), std::string::npos) << one.why_winner[0];
  EXPECT_NE(one.why_winner[0].find("runner-up"), std::string::npos) << one.why_winner[0];
}
