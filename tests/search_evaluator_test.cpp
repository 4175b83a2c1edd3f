// The search's evaluator against the memory model it reproduces: identical worst-stage totals on sampled layouts.
#include <gtest/gtest.h>

#include <random>

#include "gpuplan/hardware.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/plan.hpp"
#include "search/search_internal.hpp"

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
  return in;
}

// Walks the space of `in`, samples layouts and compares the evaluator's memory with estimate_memory.
void check_sampled(const PlanInputs& in, int samples, unsigned seed) {
  search::Evaluator ev(in);
  search::Space space(ev);
  ASSERT_FALSE(space.shapes().empty());
  std::mt19937 rng(seed);
  for (int n = 0; n < samples; ++n) {
    const std::size_t i = rng() % space.shapes().size();
    search::Shape s = space.shapes()[i];
    ev.prepare(s);
    const auto& mbs = space.micro_batches()[i];
    search::Variant v;
    v.micro_batch = mbs[rng() % mbs.size()];
    const auto& spov = space.spov(s);
    const auto& pick = spov[rng() % spov.size()];
    v.sp = pick.first;
    v.tp_overlap = pick.second;
    const auto& zo = space.zero_offload()[rng() % space.zero_offload().size()];
    v.zero = zo.zero;
    v.offload = zo.offload;
    v.target = zo.target;
    const int rc = static_cast<int>(rng() % 3);
    v.recompute = rc == 0 ? Recompute::none : (rc == 1 ? Recompute::selective : Recompute::full);
    v.recompute_layers = -1;
    if (v.recompute == Recompute::full && rng() % 2 == 0)
      v.recompute_layers = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(s.layers_per_stage));
    std::vector<search::StageActs> acts;
    ev.stage_acts(s, v.micro_batch, v.sp, v.recompute == Recompute::selective, acts);
    const search::MemoryResult lean = ev.memory(s, acts, v);

    MemoryInputs mi = in.base;
    mi.layout = ev.layout_of(s, v);
    mi.training.micro_batch = v.micro_batch;
    const MemoryReport full = estimate_memory(mi);
    ASSERT_EQ(lean.total, full.worst().total)
        << "tp " << s.tp << " cp " << s.cp << " pp " << s.pp << " vpp " << s.vpp << " ep " << s.ep << " etp " << s.etp
        << " dp " << s.dp << " mb " << v.micro_batch << " zero " << v.zero << " rc " << static_cast<int>(v.recompute)
        << " k " << v.recompute_layers;
    double host = 0;
    for (const auto& st : full.stages) host = std::max(host, static_cast<double>(st.host + st.nvme));
    EXPECT_NEAR(lean.host, host, 1.0 + 1e-9 * host);
    // The states-only bound never exceeds the real total.
    EXPECT_LE(ev.states_lower_bound(s, v.zero, v.offload) * (1 - 1e-12), static_cast<double>(lean.total));
    // The time lower bound never exceeds the step time.
    const PlanTime t = ev.time(s, v);
    EXPECT_LE(ev.time_lower_bound(s, v.micro_batch, v.recompute, v.recompute_layers), t.step_s * (1 + 1e-12));
  }
}

TEST(SearchEvaluator, MatchesEstimateMemoryDense) {
  check_sampled(inputs_for("llama-3.1-8b", "dgx-h100", 2, 64, 4096), 1500, 1);
}

TEST(SearchEvaluator, MatchesEstimateMemoryGpt3) {
  check_sampled(inputs_for("gpt3-175b", "dgx-a100", 32, 1024, 2048), 1500, 2);
}

TEST(SearchEvaluator, MatchesEstimateMemoryMoe) {
  check_sampled(inputs_for("mixtral-8x7b", "dgx-h100", 2, 256, 4096), 1500, 3);
  check_sampled(inputs_for("deepseek-v3", "dgx-h100", 8, 512, 4096), 500, 4);
}

TEST(SearchEvaluator, MemoryShrinksAndTimeGrowsWithRecomputedLayers) {
  const PlanInputs in = inputs_for("llama-3.1-70b", "dgx-h100", 8, 256, 4096);
  search::Evaluator ev(in);
  search::Shape s;
  s.gpus = 64;
  s.tp = 8;
  s.pp = 4;
  s.dp = 2;
  s.etp = 8;
  s.layers_per_stage = 20;
  ev.prepare(s);
  search::Variant v;
  v.micro_batch = 1;
  v.sp = true;
  v.zero = 1;
  v.recompute = Recompute::full;
  std::vector<search::StageActs> acts;
  ev.stage_acts(s, 1, true, false, acts);
  bytes_t prev_mem = 0;
  double prev_time = 0;
  for (std::int64_t k = 1; k <= 20; ++k) {
    v.recompute_layers = k;
    const bytes_t mem = ev.memory(s, acts, v).total;
    const double t = ev.time(s, v).step_s;
    if (k > 1) {
      EXPECT_LE(mem, prev_mem);
      EXPECT_GE(t, prev_time);
    }
    prev_mem = mem;
    prev_time = t;
  }
}

}  // namespace
}  // namespace gpuplan
