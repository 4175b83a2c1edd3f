// The search's evaluator against the models it uses: identical worst-stage totals to estimate_memory, the step time
// of estimate_step on the inputs `gpuplan estimate` builds, and the properties of the time lower bound the pruning
// relies on, on sampled layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/plan.hpp"
#include "search/search_internal.hpp"

namespace gpuplan {
namespace {

PlanInputs evaluator_inputs(const std::string& model, const std::string& system, int nodes, std::int64_t global_batch,
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
    const search::Shape& s = space.shapes()[i];
    const memory::MemoryModel memory_model = ev.memory_model(s);
    const auto& mbs = space.micro_batches()[i];
    search::Variant v;
    v.micro_batch = mbs[rng() % mbs.size()];
    const auto& spov = space.spov(s);
    const auto& pick = spov[rng() % spov.size()];
    v.sequence_parallel = pick.first;
    v.tp_overlap = pick.second;
    const auto& zo = space.zero_offload()[rng() % space.zero_offload().size()];
    v.zero = zo.zero;
    v.offload = zo.offload;
    v.offload_target = zo.target;
    const int rc = static_cast<int>(rng() % 3);
    v.recompute = rc == 0 ? Recompute::none : (rc == 1 ? Recompute::selective : Recompute::full);
    v.recompute_layers = -1;
    if (v.recompute == Recompute::full && rng() % 2 == 0)
      v.recompute_layers = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(s.layers_per_stage));
    const memory::ActivationTable acts =
        memory_model.activations(v.micro_batch, v.sequence_parallel, v.recompute == Recompute::selective);
    const memory::MemoryPeak lean = memory_model.peak(acts, v);

    MemoryInputs mi = in.base;
    mi.layout = ev.layout_of(s, v);
    mi.training.micro_batch = v.micro_batch;
    // The search screens with allocator_reserve_factor; estimate_memory, the report people read, replays the
    // caching allocator where it can. Apart from that reserve the two agree to the byte.
    const memory::MemoryJob job(mi);
    const Layout resolved = resolve_layout(mi);
    const MemoryReport full =
        memory::MemoryModel(job, resolved).report(memory::variant_of(resolved, v.micro_batch), false, false);
    ASSERT_EQ(lean.total, full.worst().total)
        << "tp " << s.tp << " cp " << s.cp << " pp " << s.pp << " vpp " << s.vpp << " ep " << s.ep << " etp " << s.etp
        << " dp " << s.dp << " mb " << v.micro_batch << " zero " << v.zero << " rc " << static_cast<int>(v.recompute)
        << " k " << v.recompute_layers;
    double host = 0;
    for (const auto& st : full.stages) host = std::max(host, static_cast<double>(st.host + st.nvme));
    EXPECT_NEAR(lean.host_bytes, host, 1.0 + 1e-9 * host);
    // The states-only bound never exceeds the real total.
    EXPECT_LE(memory_model.states_lower_bound(v.zero, v.offload) * (1 - 1e-12), static_cast<double>(lean.total));
    // The step time is estimate_step's on the inputs built from scratch, as `gpuplan estimate` builds them.
    EstimateInputs est = ev.estimate_inputs();
    ev.set_layout(est, s, v);
    EstimateInputs fresh;
    fresh.memory = mi;
    fresh.gpu = in.gpu;
    fresh.fabric = in.fabric;
    fresh.time.tp_overlap = v.tp_overlap && s.tp > 1;
    const double step = estimate_step_time(est).step_s;
    ASSERT_EQ(step, estimate_step(fresh).step_s);
    // The search times a variant with the step model of another variant of its (shape, micro-batch, sequence
    // parallelism, overlap): the plainest one here (ZeRO 0, no offload or recomputation). Exactly the same time.
    {
      search::Variant first;
      first.micro_batch = v.micro_batch;
      first.sequence_parallel = v.sequence_parallel;
      first.tp_overlap = v.tp_overlap;
      EstimateInputs ef = ev.estimate_inputs();
      ev.set_layout(ef, s, first);
      const perf::StepModel model(ef, ev.step_job());
      ASSERT_EQ(model.time(est.memory.layout).step_s, step) << "zero " << v.zero << " rc " << static_cast<int>(v.recompute);
    }
    // The lower bound never exceeds it.
    const double lb = ev.step_lower_bound_s(est);
    EXPECT_LE(lb, step);
    // The bound of the (shape, micro-batch, sequence parallelism, overlap) group, plus what recomputation adds to
    // the FLOP floor, never exceeds the step time either.
    EstimateInputs eg = ev.estimate_inputs();
    search::Variant none = v;
    none.recompute = Recompute::none;
    none.recompute_layers = -1;
    ev.set_layout(eg, s, none);
    const double floor = ev.step_lower_bound_s(eg);
    const perf::StepModel group_model(eg, ev.step_job());
    const double group = search::Evaluator::variant_lower_bound_s(group_model);
    EXPECT_LE(group + std::max(0.0, lb - floor), step);
    // What the pruning relies on: the bound of the item's plainest layout (no recomputation, ZeRO 0, no sequence
    // parallelism, overlap or offload) is at most the bound of every layout of the item, and the bound never falls
    // as more layers are recomputed.
    search::Variant plain;
    plain.micro_batch = v.micro_batch;
    EstimateInputs e0 = ev.estimate_inputs();
    ev.set_layout(e0, s, plain);
    EXPECT_LE(ev.step_lower_bound_s(e0), lb);
    if (v.recompute == Recompute::full) {
      const std::int64_t k = v.recompute_layers < 0 ? s.layers_per_stage : v.recompute_layers;
      if (k < s.layers_per_stage) {
        search::Variant more = v;
        more.recompute_layers = k + 1 == s.layers_per_stage ? -1 : k + 1;
        EstimateInputs e1 = ev.estimate_inputs();
        ev.set_layout(e1, s, more);
        EXPECT_LE(lb, ev.step_lower_bound_s(e1));
      }
    }
  }
}

TEST(SearchEvaluator, MatchesEstimateMemoryDense) {
  check_sampled(evaluator_inputs("llama-3.1-8b", "dgx-h100", 2, 64, 4096), 1500, 1);
}

TEST(SearchEvaluator, MatchesEstimateMemoryGpt3) {
  check_sampled(evaluator_inputs("gpt3-175b", "dgx-a100", 32, 1024, 2048), 1500, 2);
}

TEST(SearchEvaluator, MatchesEstimateMemoryMoe) {
  check_sampled(evaluator_inputs("mixtral-8x7b", "dgx-h100", 2, 256, 4096), 1500, 3);
  check_sampled(evaluator_inputs("deepseek-v3", "dgx-h100", 8, 512, 4096), 500, 4);
}

TEST(SearchEvaluator, MemoryShrinksAndTheTimeBoundGrowsWithRecomputedLayers) {
  const PlanInputs in = evaluator_inputs("llama-3.1-70b", "dgx-h100", 8, 256, 4096);
  search::Evaluator ev(in);
  search::Shape s;
  s.gpus = 64;
  s.tp = 8;
  s.pp = 4;
  s.dp = 2;
  s.etp = 8;
  s.layers_per_stage = 20;
  const memory::MemoryModel memory_model = ev.memory_model(s);
  search::Variant v;
  v.micro_batch = 1;
  v.sequence_parallel = true;
  v.zero = 1;
  v.recompute = Recompute::full;
  const memory::ActivationTable acts = memory_model.activations(1, true, false);
  bytes_t prev_mem = 0;
  double prev_time = 0;
  EstimateInputs est = ev.estimate_inputs();
  for (std::int64_t k = 1; k <= 20; ++k) {
    v.recompute_layers = k;
    const bytes_t mem = memory_model.peak(acts, v).total;
    ev.set_layout(est, s, v);
    const double t = ev.step_lower_bound_s(est);
    if (k > 1) {
      EXPECT_LE(mem, prev_mem);
      EXPECT_GE(t, prev_time);
    }
    prev_mem = mem;
    prev_time = t;
  }
}

// The sensitivity's constrained spaces are taken from the main space (Space(ev, wider)); each must be exactly the
// space its filters give when enumerated from scratch: the same shapes with the same ZeRO/offload verdicts, the
// same micro-batches and the same count.
void expect_same_space(const search::Space& narrowed, const search::Space& fresh, const std::string& what) {
  ASSERT_EQ(narrowed.shapes().size(), fresh.shapes().size()) << what;
  EXPECT_EQ(narrowed.total(), fresh.total()) << what;
  for (std::size_t i = 0; i < fresh.shapes().size(); ++i) {
    const search::Shape& a = narrowed.shapes()[i];
    const search::Shape& b = fresh.shapes()[i];
    EXPECT_EQ(search::key_of(a, {}), search::key_of(b, {})) << what << " shape " << i;
    EXPECT_EQ(a.first_stage_layers, b.first_stage_layers) << what;
    EXPECT_EQ(a.zero_offload_mask, b.zero_offload_mask) << what << " shape " << i;
    EXPECT_EQ(narrowed.micro_batches()[i], fresh.micro_batches()[i]) << what << " shape " << i;
  }
}

TEST(SearchSpace, ANarrowedSpaceIsTheSpaceItsFiltersEnumerate) {
  PlanInputs in = evaluator_inputs("mixtral-8x7b", "dgx-h100", 4, 256, 4096);
  in.base.layout.framework = Framework::megatron;
  const search::Evaluator main_ev(in);
  const search::Space main_space(main_ev);
  const std::vector<std::pair<std::string, std::function<void(SearchSpace&)>>> edits = {
      {"tp 2", [](SearchSpace& f) { f.tp = {2}; }},
      {"pp 4", [](SearchSpace& f) { f.pp = {4}; }},
      {"cp 2", [](SearchSpace& f) { f.cp = {2}; }},
      {"ep 4", [](SearchSpace& f) { f.ep = {4}; }},
      {"vpp 2", [](SearchSpace& f) { f.vpp = {2}; }},
      {"micro-batch 2", [](SearchSpace& f) { f.micro_batch = {2}; }},
      {"zero 3", [](SearchSpace& f) { f.zero = {3}; }},
      {"zero 0", [](SearchSpace& f) { f.zero = {0}; }},
      {"no offload", [](SearchSpace& f) { f.offload = false; }},
      {"recompute none", [](SearchSpace& f) { f.recompute = {Recompute::none}; }},
      {"no sequence parallelism", [](SearchSpace& f) { f.sequence_parallel = {false}; }},
  };
  for (const auto& [what, edit] : edits) {
    PlanInputs narrow = in;
    edit(narrow.space);
    const search::Evaluator ev(narrow);
    expect_same_space(search::Space(ev, main_space), search::Space(ev), what);
  }
  // A ZeRO stage the wider space left out: enumerated from scratch, the same again.
  PlanInputs zero_one = in;
  zero_one.space.zero = {1};
  const search::Evaluator one_ev(zero_one);
  const search::Space only_zero_one(one_ev);
  PlanInputs zero_two = in;
  zero_two.space.zero = {2};
  const search::Evaluator two_ev(zero_two);
  expect_same_space(search::Space(two_ev, only_zero_one), search::Space(two_ev), "zero 2 from zero 1");
}

}  // namespace
}  // namespace gpuplan
