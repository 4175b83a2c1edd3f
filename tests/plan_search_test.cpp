// The layout search: the size of the space counted by hand, pruning that never changes the answer, constraints
// and filters respected, nothing infeasible returned, and what happens when nothing fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/plan.hpp"

namespace gpuplan {
namespace {

PlanInputs inputs_for(const std::string& model, const std::string& system, int nodes, std::int64_t global_batch,
                      std::int64_t seq) {
  PlanInputs in;
  in.base.model = model_from_catalog(model);
  in.base.training.seq_len = seq;
  in.base.training.global_batch = global_batch;
  in.base.overheads = default_overheads();
  set_cluster(in, make_cluster(system, nodes));
  in.explain = false;
  return in;
}

ModelConfig tiny_model() {
  ModelConfig m;
  m.name = "tiny";
  m.model_type = "custom";
  m.layers = 4;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 1024;
  m.vocab = 1000;
  m.mlp = MlpKind::plain;
  m.norm = NormKind::layernorm;
  m.positions = PositionKind::rotary;
  return m;
}

TEST(PlanSpace, CountsTheSpaceOfASmallCaseExactly) {
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 1, 4, 128);
  in.base.model = tiny_model();
  in.gpus = 4;
  in.space.cp = {1};
  in.space.vpp = {1};
  in.space.zero = {0, 1};
  in.space.offload = false;
  in.space.recompute = {Recompute::none, Recompute::full};
  // By hand: (tp, pp, dp) with tp | 4 heads, pp | 4 layers, tp pp dp = 4: six shapes. Per shape: micro-batches
  // dividing 4 / dp, x 3 sequence-parallel/overlap choices when tp > 1 (1 otherwise), x 2 ZeRO stages,
  // x (1 + 4/pp) recompute choices (none, or full of 1..layers-per-stage layers):
  // (1,1,4) 1*1*2*5=10  (1,2,2) 2*1*2*3=12  (1,4,1) 3*1*2*2=12  (2,1,2) 2*3*2*5=60  (2,2,1) 3*3*2*3=54
  // (4,1,1) 3*3*2*5=90
  EXPECT_EQ(count_space(in), 238u);
  in.prune = false;
  const PlanResult r = search_plans(in);
  EXPECT_EQ(r.space, 238u);
  EXPECT_EQ(r.evaluated, 238u);   // without pruning every layout is evaluated
}

TEST(PlanSpace, FiltersShrinkTheSpace) {
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 1, 4, 128);
  in.base.model = tiny_model();
  in.gpus = 4;
  in.space.cp = {1};
  in.space.vpp = {1};
  in.space.zero = {0, 1};
  in.space.offload = false;
  in.space.recompute = {Recompute::none, Recompute::full};
  in.space.tp = {2};
  EXPECT_EQ(count_space(in), 114u);   // shapes (2,1,2) and (2,2,1) of the case above: 60 + 54
  in.space.partial_recompute = false;
  // Full recompute counts once: (2,1,2) 2*3*2*2=24, (2,2,1) 3*3*2*2=36.
  EXPECT_EQ(count_space(in), 60u);
}

void expect_same_top(const PlanResult& a, const PlanResult& b) {
  ASSERT_EQ(a.plans.size(), b.plans.size());
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    EXPECT_EQ(layout_flags(a.plans[i]), layout_flags(b.plans[i])) << "rank " << i;
    EXPECT_DOUBLE_EQ(a.plans[i].time.step_s, b.plans[i].time.step_s);
  }
}

TEST(PlanSearch, PrunedTopKEqualsExhaustiveTopK) {
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 2, 64, 4096);
  in.space.vpp = {1, 2};
  in.top_k = 5;
  in.threads = 2;
  const PlanResult pruned = search_plans_threaded(in);
  in.prune = false;
  const PlanResult full = search_plans_threaded(in);
  EXPECT_EQ(pruned.space, full.space);
  EXPECT_EQ(full.evaluated, full.space);
  EXPECT_LT(pruned.evaluated, full.evaluated);
  expect_same_top(pruned, full);
  // Every layout is accounted for exactly once: evaluated or pruned; every evaluated layout that fits is timed.
  EXPECT_EQ(pruned.evaluated + pruned.pruned_states + pruned.pruned_time, pruned.space);
  EXPECT_EQ(pruned.feasible, pruned.timed);
  EXPECT_EQ(full.feasible, full.timed);
}

TEST(PlanSearch, PrunedEqualsExhaustiveForMoe) {
  PlanInputs in = inputs_for("mixtral-8x7b", "dgx-h100", 2, 128, 4096);
  in.space.vpp = {1};
  in.space.cp = {1, 2};
  in.top_k = 3;
  const PlanResult pruned = search_plans(in);
  in.prune = false;
  const PlanResult full = search_plans(in);
  expect_same_top(pruned, full);
  EXPECT_EQ(pruned.evaluated + pruned.pruned_states + pruned.pruned_time, pruned.space);
}

// The step time a plan is ranked by is estimate_step's on the inputs `gpuplan estimate` builds from the plan's
// flags: built here from scratch (cluster fabric, GPU, the layout, the micro-batch, TP overlap).
void expect_estimate_step_times(const PlanInputs& in, const std::string& system, int nodes, const PlanResult& r) {
  const Cluster c = make_cluster(system, nodes);
  for (const Plan& p : r.plans) {
    EstimateInputs e;
    e.memory.model = in.base.model;
    e.memory.training = in.base.training;
    e.memory.training.micro_batch = p.micro_batch;
    e.memory.overheads = default_overheads();
    e.memory.capacity_bytes = c.gpu.usable_memory_bytes;
    e.memory.layout = p.layout;
    e.gpu = c.gpu;
    e.fabric = fabric_from_cluster(c);
    e.time.tp_overlap = p.tp_overlap;
    const StepEstimate direct = estimate_step(e);
    EXPECT_EQ(p.time.step_s, direct.step_s) << layout_flags(p);
    EXPECT_EQ(p.time.breakdown, direct.breakdown) << layout_flags(p);
    EXPECT_EQ(p.time.step_s, estimate_step(plan_estimate_inputs(in, p)).step_s);
    // The score is the objective of that step time: seconds for step-time.
    if (in.objective == Objective::step_time) {
      EXPECT_EQ(p.score, p.time.step_s);
    }
  }
}

TEST(PlanSearch, RanksByEstimateStep) {
  PlanInputs in = inputs_for("llama-3.1-70b", "dgx-h100", 8, 256, 4096);
  in.top_k = 5;
  const PlanResult r = search_plans(in);
  ASSERT_EQ(r.plans.size(), 5u);
  expect_estimate_step_times(in, "dgx-h100", 8, r);
  PlanInputs moe = inputs_for("mixtral-8x7b", "dgx-h100", 2, 128, 4096);
  moe.top_k = 3;
  const PlanResult rm = search_plans(moe);
  ASSERT_FALSE(rm.plans.empty());
  expect_estimate_step_times(moe, "dgx-h100", 2, rm);
  // evaluate_layout ranks a given layout the same way.
  const Plan& best = r.plans.front();
  const Plan again = evaluate_layout(in, best.layout, best.micro_batch, best.tp_overlap);
  EXPECT_EQ(again.time.step_s, best.time.step_s);
  EXPECT_EQ(again.memory_bytes, best.memory_bytes);
}

TEST(PlanSearch, TokensPerSecondRanksLikeStepTimeOnAFixedCluster) {
  // With the GPU count and the global batch fixed, tokens per second is tokens per step over the step time.
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 1, 64, 4096);
  in.top_k = 3;
  const PlanResult a = search_plans(in);
  in.objective = Objective::tokens_per_s;
  const PlanResult b = search_plans(in);
  expect_same_top(a, b);
}

TEST(PlanSearch, OneThreadAndTwoThreadsAgree) {
  PlanInputs in = inputs_for("llama-3.1-70b", "dgx-h100", 8, 256, 4096);
  const PlanResult sequential = search_plans(in);
  in.threads = 1;
  const PlanResult one = search_plans_threaded(in);
  in.threads = 2;
  const PlanResult two = search_plans_threaded(in);
  expect_same_top(sequential, one);
  expect_same_top(one, two);
}

TEST(PlanSearch, ProgressIsReportedFromOneThreadUpToTheWholeSpace) {
  PlanInputs in = inputs_for("llama-3.1-70b", "dgx-h100", 8, 256, 4096);
  in.threads = 2;
  in.explain = false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  std::thread::id caller;
  bool one_thread = true;
  const PlanResult r = search_plans_threaded(in, [&](std::uint64_t done, std::uint64_t space) {
    if (calls.empty()) caller = std::this_thread::get_id();
    one_thread = one_thread && caller == std::this_thread::get_id();
    calls.push_back({done, space});
  });
  ASSERT_FALSE(calls.empty());
  EXPECT_TRUE(one_thread);
  EXPECT_EQ(calls.back(), std::make_pair(r.space, r.space));
  for (std::size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
}

TEST(PlanSearch, NeverReturnsAnInfeasibleLayoutAndRespectsConstraints) {
  PlanInputs in = inputs_for("llama-3.1-70b", "dgx-h100", 8, 256, 4096);
  in.top_k = 10;
  in.space.tp = {2, 4, 8};
  in.space.zero = {1, 2};
  in.space.offload = false;
  const PlanResult r = search_plans(in);
  ASSERT_FALSE(r.plans.empty());
  const ModelConfig& m = *in.base.model;
  const bytes_t usable = static_cast<bytes_t>(static_cast<double>(in.base.capacity_bytes) * (1 - in.base.memory_margin));
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    // The memory model itself, re-run on the returned layout, says it fits under the margin.
    EXPECT_EQ(p.memory.worst().total, estimate_memory(plan_memory_inputs(in, p)).worst().total);
    EXPECT_LE(p.memory.worst().total, usable);
    EXPECT_TRUE(p.layout.tp == 2 || p.layout.tp == 4 || p.layout.tp == 8);
    EXPECT_TRUE(p.layout.zero == 1 || p.layout.zero == 2);
    EXPECT_EQ(p.layout.offload, Offload::none);
    EXPECT_EQ(m.heads % p.layout.tp, 0);
    EXPECT_EQ(m.layers % (p.layout.pp * p.layout.vpp), 0);
    EXPECT_EQ(p.layout.tp * p.layout.pp * p.layout.cp * p.layout.dp, 64);
    EXPECT_EQ(256 % (p.micro_batch * p.layout.dp), 0);
    if (i > 0) {
      EXPECT_LE(r.plans[i - 1].score, p.score);
    }
  }
}

TEST(PlanSearch, NothingFitsReportsTheClosestLayouts) {
  PlanInputs in = inputs_for("llama-3.1-70b", "dgx-h100", 1, 8, 4096);
  in.gpus = 1;
  in.space.offload = false;
  const PlanResult r = search_plans(in);
  EXPECT_TRUE(r.plans.empty());
  EXPECT_EQ(r.feasible, 0u);
  ASSERT_FALSE(r.near_misses.empty());
  for (std::size_t i = 0; i < r.near_misses.size(); ++i) {
    EXPECT_GT(r.near_misses[i].memory_bytes, r.near_misses[i].usable_bytes);
    if (i > 0) {
      EXPECT_LE(r.near_misses[i - 1].memory_bytes, r.near_misses[i].memory_bytes);
    }
  }
}

TEST(PlanSearch, BadInputIsAnInputError) {
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 1, 0, 4096);
  EXPECT_THROW(search_plans(in), InputError);   // no global batch
  in.base.training.global_batch = 64;
  in.space.zero = {5};
  EXPECT_THROW(search_plans(in), InputError);
  in.space.zero = {};
  in.space.tp = {3};
  EXPECT_THROW(search_plans(in), InputError);   // 3 divides neither 32 heads nor 8 GPUs: empty space
  in.space.tp = {};
  in.base.memory_margin = 1.5;
  EXPECT_THROW(search_plans(in), InputError);
  in.base.memory_margin = 0.08;
  in.objective = Objective::cost;
  EXPECT_THROW(search_plans(in), InputError);   // cost without a price
}

TEST(PlanSearch, ExplainsTheWinner) {
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 1, 64, 4096);
  in.explain = true;
  const PlanResult r = search_plans(in);
  ASSERT_GE(r.plans.size(), 2u);
  EXPECT_FALSE(r.why_winner.empty());
  EXPECT_FALSE(r.sensitivity.empty());
  for (const Sensitivity& s : r.sensitivity)
    if (s.fits) {
      EXPECT_GE(s.delta, -1e-12) << s.change;   // the winner is the best: no change makes it faster
    }
}

TEST(PlanSearch, EachSensitivityIsTheBestOfAnUnprunedSearchWithThatChoice) {
  // The sensitivity's searches start from the bounds the main search computed; an exhaustive search (no pruning,
  // nothing shared) restricted to the changed choice must find the same best step time.
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 1, 32, 4096);
  in.explain = true;
  const PlanResult r = search_plans(in);
  int compared = 0;
  for (const Sensitivity& s : r.sensitivity) {
    PlanInputs alone = in;
    alone.explain = false;
    alone.prune = false;
    alone.top_k = 1;
    const std::string& change = s.change;
    auto value_after = [&](std::size_t prefix) { return std::stoll(change.substr(prefix)); };
    if (change.rfind("ZeRO-", 0) == 0) alone.space.zero = {static_cast<int>(value_after(5))};
    else if (change.rfind("micro-batch ", 0) == 0) alone.space.micro_batch = {value_after(12)};
    else if (change.rfind("TP=", 0) == 0) alone.space.tp = {value_after(3)};
    else if (change.rfind("PP=", 0) == 0) alone.space.pp = {value_after(3)};
    else continue;
    const PlanResult best = search_plans(alone);
    ASSERT_EQ(best.plans.empty(), !s.fits) << change;
    if (s.fits) {
      EXPECT_DOUBLE_EQ(best.plans.front().time.step_s, s.step_s) << change;
    }
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

TEST(PlanSearch, CostObjectiveMayUseFewerNodes) {
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 4, 64, 4096);
  in.objective = Objective::cost;
  in.price_per_gpu_hour = 2.0;
  const std::uint64_t all_counts = count_space(in);
  in.objective = Objective::step_time;
  EXPECT_GT(all_counts, count_space(in));   // 8, 16, 24 and 32 GPUs instead of 32 only
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

TEST(PlanSearch, ContextParallelLayoutsTakeTheirFastestExchange) {
  // Llama-3.1-8B at 128k tokens on 16 H100s with CP 8: no other --cp-comm-type makes the #1 layout faster.
  PlanInputs in = inputs_for("llama-3.1-8b", "dgx-h100", 2, 16, 131072);
  in.space.cp = {8};
  in.top_k = 1;
  const PlanResult r = search_plans_threaded(in);
  ASSERT_FALSE(r.plans.empty());
  const Plan& best = r.plans.front();
  const std::pair<CpComm, std::int64_t> others[] = {
      {CpComm::p2p, 1}, {CpComm::a2a, 1}, {CpComm::all_gather, 1}, {CpComm::a2a_p2p, 2}, {CpComm::a2a_p2p, 4}};
  int compared = 0;
  for (const auto& [comm, group] : others) {
    Layout l = best.layout;
    l.cp_comm = comm;
    l.cp_a2a = group;
    try {
      const Plan other = evaluate_layout(in, l, best.micro_batch, best.tp_overlap);
      EXPECT_GE(other.time.step_s, best.time.step_s * (1 - 1e-12)) << to_string(comm) << " " << group;
      ++compared;
    } catch (const InputError&) {   // an exchange the heads or the group size do not allow
    }
  }
  EXPECT_GE(compared, 3);
}

}  // namespace
}  // namespace gpuplan
