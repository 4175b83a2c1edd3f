// Public entry points of the layout search: search_plans (ranking, explanation, sensitivity, near misses),
// count_space, evaluate_layout, and the flags that reproduce a plan.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <string_view>

#include "framework/rules.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"
#include "search/search_internal.hpp"

namespace gpuplan {

using search::Candidate;
using search::Evaluator;
using search::Shape;
using search::Space;
using search::Variant;

MemoryInputs plan_memory_inputs(const PlanInputs& in, const Plan& plan) {
  MemoryInputs mi = in.base;
  mi.layout = plan.layout;
  mi.training.micro_batch = plan.micro_batch;
  return mi;
}

EstimateInputs plan_estimate_inputs(const PlanInputs& in, const Plan& plan) {
  EstimateInputs e;
  e.memory = plan_memory_inputs(in, plan);
  e.gpu = in.gpu;
  e.fabric = in.fabric;
  e.time.tp_overlap = plan.tp_overlap;
  e.perf = in.perf;
  return e;
}

void set_cluster(PlanInputs& in, const Cluster& c) {
  in.gpu = c.gpu;
  in.system = c.system;
  in.fabric = fabric_from_cluster(c);
  if (in.base.capacity_bytes <= 0) in.base.capacity_bytes = c.gpu.usable_memory_bytes;
  in.base.gpu_fp8_any_layout = c.gpu.fp8_gemm_any_layout();
}

std::string layout_flags(const Plan& p) {
  const Layout& l = p.layout;
  std::string s = fmt::format("--gpus {} --tp {} --pp {}", l.gpus, l.tp, l.pp);
  if (l.vpp > 1) s += fmt::format(" --vpp {}", l.vpp);
  if (l.cp > 1) s += fmt::format(" --cp {}", l.cp);
  if (l.cp > 1 && l.cp_comm != CpComm::p2p) s += fmt::format(" --cp-comm-type {}", to_string(l.cp_comm));
  if (l.cp_comm == CpComm::a2a_p2p) s += fmt::format(" --cp-a2a-size {}", l.cp_a2a);
  if (l.ep > 1) s += fmt::format(" --ep {}", l.ep);
  if (l.ep > 1 || l.etp != l.tp) s += fmt::format(" --etp {}", l.etp);
  if (l.first_stage_layers >= 0) s += fmt::format(" --first-stage-layers {}", l.first_stage_layers);
  if (l.last_stage_layers >= 0) s += fmt::format(" --last-stage-layers {}", l.last_stage_layers);
  s += fmt::format(" --dp {} --micro-batch {}", l.dp, p.micro_batch);
  if (l.sequence_parallel) s += " --sequence-parallel";
  if (p.tp_overlap) s += " --tp-overlap";
  s += fmt::format(" --zero {}", l.zero);
  if (l.recompute != Recompute::none) s += fmt::format(" --recompute {}", to_string(l.recompute));
  if (l.recompute == Recompute::full && l.recompute_layers >= 0)
    s += fmt::format(" --recompute-layers {}", l.recompute_layers);
  if (l.offload != Offload::none) {
    s += fmt::format(" --offload {}", to_string(l.offload));
    if (l.offload_target != OffloadTarget::cpu) s += fmt::format(" --offload-target {}", to_string(l.offload_target));
  }
  return s;
}

namespace {

// A plan with its estimate_step report (and, with full_report, estimate_memory's report with its terms).
Plan make_plan(const Evaluator& ev, const Shape& s, const Variant& v, bytes_t memory_bytes, bool full_report) {
  Plan p;
  p.layout = ev.layout_of(s, v);
  p.micro_batch = v.micro_batch;
  p.microbatches = ev.microbatches(s, v.micro_batch);
  p.tp_overlap = v.tp_overlap && s.tp > 1;
  p.memory_bytes = memory_bytes;
  p.usable_bytes = ev.usable_bytes();
  EstimateInputs est = ev.estimate_inputs();
  ev.set_layout(est, s, v);
  p.time = estimate_step(est);
  p.score = ev.score(s, p.time.step_s);
  p.cost_per_mtokens = ev.cost_per_mtokens(s, p.time.step_s);
  if (full_report) {
    p.memory = estimate_memory(est.memory, true);
    p.memory_bytes = p.memory.worst().total;
  }
  return p;
}

std::vector<Variant> sorted_equivalents(const Shape& s, std::vector<Variant> variants) {
  std::sort(variants.begin(), variants.end(),
            [&](const Variant& a, const Variant& b) { return search::key_of(s, a) < search::key_of(s, b); });
  return variants;
}

// The distance between neighbouring ranks of a dimension's group: the product of the degrees placed inside it.
// Expert parallelism is carved out of the data-parallel ranks (Megatron-Core), so it adds no stride of its own.
std::int64_t stride_of(const Layout& l, ParallelDim dim, const std::string& order) {
  std::int64_t stride = 1;
  for (ParallelDim inner : parse_order(order)) {
    if (inner == dim) break;
    if (inner == ParallelDim::tp) stride *= l.tp;
    if (inner == ParallelDim::cp) stride *= l.cp;
    if (inner == ParallelDim::dp) stride *= l.dp;
    if (inner == ParallelDim::pp) stride *= l.pp;
  }
  return stride;
}

std::string describe_group(const PlanInputs& in, const char* name, std::int64_t n, std::int64_t stride) {
  const std::int64_t per_node = std::max(1, in.fabric.gpus_per_node);
  const std::int64_t domain = std::max(1, in.fabric.domain_size);
  std::string where;
  if (n <= 1) return fmt::format("{}={}", name, n);
  if (n * stride > per_node) where = "across nodes";
  else if (n * stride <= domain && in.fabric.domain_per_gpu_GBps > 0) where = fmt::format("inside {}", scaleup_name(in.fabric));
  else where = "over PCIe";
  return fmt::format("{}={} ({})", name, n, where);
}

std::string summary(const Plan& p) {
  const Layout& l = p.layout;
  std::string s = fmt::format("TP={} PP={}", l.tp, l.pp);
  if (l.first_stage_layers >= 0 || l.last_stage_layers >= 0)
    s += fmt::format("(first {} last {})", l.first_stage_layers, l.last_stage_layers);
  if (l.vpp > 1) s += fmt::format(" VPP={}", l.vpp);
  if (l.cp > 1) s += fmt::format(" CP={}", l.cp);
  if (l.cp > 1 && l.cp_comm != CpComm::p2p) s += fmt::format("({})", to_string(l.cp_comm));
  if (l.ep > 1) s += fmt::format(" EP={} ETP={}", l.ep, l.etp);
  s += fmt::format(" DP={} mb={} ZeRO-{}", l.dp, p.micro_batch, l.zero);
  if (l.sequence_parallel) s += " SP";
  if (p.tp_overlap) s += "+overlap";
  if (l.recompute == Recompute::selective) s += " recompute=selective";
  if (l.recompute == Recompute::full)
    s += l.recompute_layers < 0
             ? " recompute=full"
             : fmt::format(" recompute=full({})", format_quantity(l.recompute_layers, "layer", "layers"));
  if (l.offload != Offload::none) s += fmt::format(" offload={}:{}", to_string(l.offload), to_string(l.offload_target));
  return s;
}

std::vector<std::string> why(const Plan& a, const Plan& b) {
  std::vector<std::string> out;
  const double d = b.time.step_s / a.time.step_s - 1.0;
  out.push_back(fmt::format("runner-up {} is {:.1f}% slower ({:.3f} s vs {:.3f} s per step)", summary(b), 100.0 * d,
                            b.time.step_s, a.time.step_s));
  // estimate_step reports the same terms in the same order for every layout.
  const auto& ta = a.time.breakdown;
  const auto& tb = b.time.breakdown;
  std::vector<std::size_t> order(std::min(ta.size(), tb.size()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::abs(tb[x].seconds - ta[x].seconds) > std::abs(tb[y].seconds - ta[y].seconds);
  });
  for (std::size_t i : order) {
    const double delta = tb[i].seconds - ta[i].seconds;
    if (std::abs(delta) < 1e-4 * a.time.step_s) continue;
    out.push_back(fmt::format("{}: {:.3f} s vs {:.3f} s ({:+.3f} s for the runner-up)", ta[i].name, ta[i].seconds,
                              tb[i].seconds, delta));
    if (out.size() >= 5) break;
  }
  if (a.memory_bytes != b.memory_bytes)
    out.push_back(fmt::format("memory per GPU: {} vs {}", format_bytes(static_cast<double>(a.memory_bytes)),
                              format_bytes(static_cast<double>(b.memory_bytes))));
  return out;
}

// The best layout of the main search's space narrowed by `edit`.
search::SearchOutcome constrained(const PlanInputs& base, const Space& main_space,
                                  const std::function<void(SearchSpace&)>& edit, const ParallelRunner& runner,
                                  std::unique_ptr<Evaluator>& ev_out, std::unique_ptr<Space>& space_out,
                                  double known_best, const search::BoundMemo& memo) {
  PlanInputs in = base;
  in.explain = false;
  edit(in.space);
  ev_out = std::make_unique<Evaluator>(in);
  space_out = std::make_unique<Space>(*ev_out, main_space);
  return search::run_search(*space_out, 1, runner, {}, known_best, {&memo, nullptr});
}

std::vector<std::int64_t> neighbours(const std::vector<std::int64_t>& values, std::int64_t v) {
  std::vector<std::int64_t> out;
  auto it = std::lower_bound(values.begin(), values.end(), v);
  if (it != values.begin()) out.push_back(*(it - 1));
  if (it != values.end() && *it == v) ++it;
  if (it != values.end()) out.push_back(*it);
  return out;
}

// One choice of the winner changed: what the label says, and how it narrows the search space. A TP or CP group
// is labelled with where it lands (inside NVLink, across nodes) once the best layout with it is known.
struct Probe {
  std::string change;
  std::function<void(SearchSpace&)> edit;
  search::Choice choice;         // the choice changed, and its new value: the main search's best with it
  std::int64_t value = 0;        // seeds the constrained search
  const char* group = nullptr;   // "TP" or "CP": placed by the layout found
};

// The values of each degree among the shapes with the winner's GPU count, sorted and unique.
struct Degrees {
  std::vector<std::int64_t> tp, pp, cp, micro_batch, vpp, ep;
};

Degrees degrees_of(const Space& space, std::int64_t gpus) {
  Degrees d;
  for (std::size_t i = 0; i < space.shapes().size(); ++i) {
    const Shape& s = space.shapes()[i];
    if (s.gpus != gpus) continue;
    d.tp.push_back(s.tp);
    d.pp.push_back(s.pp);
    d.cp.push_back(s.cp);
    d.vpp.push_back(s.vpp);
    d.ep.push_back(s.ep);
    for (std::int64_t mb : space.micro_batches()[i]) d.micro_batch.push_back(mb);
  }
  for (auto* v : {&d.tp, &d.pp, &d.cp, &d.micro_batch, &d.vpp, &d.ep}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return d;
}

std::vector<Probe> sensitivity_probes(const Space& space, const Plan& win) {
  using search::Choice;
  const Layout& w = win.layout;
  const Degrees d = degrees_of(space, w.gpus);
  std::vector<Probe> probes;
  for (std::int64_t t : neighbours(d.tp, w.tp))
    probes.push_back({fmt::format("TP={}", t), [t](SearchSpace& s) { s.tp = {t}; }, Choice::tp, t, "TP"});
  for (std::int64_t p : neighbours(d.pp, w.pp))
    probes.push_back({fmt::format("PP={}", p), [p](SearchSpace& s) { s.pp = {p}; }, Choice::pp, p});
  for (std::int64_t c : neighbours(d.cp, w.cp))
    probes.push_back({fmt::format("CP={}", c), [c](SearchSpace& s) { s.cp = {c}; }, Choice::cp, c, "CP"});
  for (std::int64_t e : neighbours(d.ep, w.ep))
    probes.push_back({fmt::format("EP={}", e), [e](SearchSpace& s) { s.ep = {e}; }, Choice::ep, e});
  if (w.pp > 1)
    for (std::int64_t v : neighbours(d.vpp, w.vpp))
      probes.push_back({fmt::format("VPP={}", v), [v](SearchSpace& s) { s.vpp = {v}; }, Choice::vpp, v});
  for (std::int64_t mb : neighbours(d.micro_batch, win.micro_batch))
    probes.push_back({fmt::format("micro-batch {}", mb), [mb](SearchSpace& s) { s.micro_batch = {mb}; },
                      Choice::micro_batch, mb});
  for (int z = 0; z <= 3; ++z)
    if (z != w.zero)
      probes.push_back({fmt::format("ZeRO-{}", z), [z](SearchSpace& s) { s.zero = {z}; }, Choice::zero, z});
  for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
    if (rc != w.recompute)
      probes.push_back({fmt::format("recompute {}", to_string(rc)), [rc](SearchSpace& s) { s.recompute = {rc}; },
                        Choice::recompute, static_cast<std::int64_t>(rc)});
  if (w.tp > 1) {
    const bool sp = w.sequence_parallel;
    probes.push_back({sp ? "no sequence parallelism" : "sequence parallelism",
                      [sp](SearchSpace& s) { s.sequence_parallel = {!sp}; }, Choice::sequence_parallel, sp ? 0 : 1});
  }
  if (w.offload != Offload::none)
    probes.push_back({"no offload", [](SearchSpace& s) { s.offload = false; }, Choice::offload,
                      static_cast<std::int64_t>(Offload::none)});
  return probes;
}

// The best layout with one choice of the winner changed; nullopt when the change leaves no layout to search.
std::optional<Sensitivity> probe_result(const PlanInputs& in, const Space& space, const Probe& p, const Plan& win,
                                        const search::ChoiceBests& bests, const search::BoundMemo& memo,
                                        const ParallelRunner& runner) {
  Sensitivity sv;
  sv.change = p.change;
  std::unique_ptr<Evaluator> ev;
  std::unique_ptr<Space> sp;
  search::SearchOutcome o;
  try {
    o = constrained(in, space, [&](SearchSpace& s) { p.edit(s); }, runner, ev, sp, bests.best(p.choice, p.value),
                    memo);
  } catch (const InputError&) {
    return std::nullopt;
  }
  if (o.top.empty()) {
    sv.fits = false;
    // No layout searched at all (none evaluated, none pruned): the framework never runs the change (DeepSpeed has
    // no selective recompute, torchtitan no ZeRO-1); otherwise every layout with it was too large.
    const search::Stats& st = o.stats;
    const bool none_searched = st.evaluated == 0 && st.pruned_states == 0 && st.pruned_time == 0;
    sv.note = none_searched ? fmt::format("{} runs no such layout (docs/frameworks.md)",
                                          framework::name_of(in.base.layout.framework))
                            : "nothing fits";
    return sv;
  }
  const Candidate& c = o.top.front();
  sv.fits = true;
  sv.step_s = c.step_s;
  sv.delta = c.step_s / win.time.step_s - 1.0;
  sv.memory_bytes = c.memory_bytes;
  Plan q;
  q.layout = ev->layout_of(sp->shapes()[c.shape_index], c.variant);
  q.micro_batch = c.variant.micro_batch;
  q.tp_overlap = c.variant.tp_overlap && q.layout.tp > 1;
  sv.note = "best: " + summary(q);
  if (p.group != nullptr) {
    const ParallelDim dim = std::string_view(p.group) == "TP" ? ParallelDim::tp : ParallelDim::cp;
    // The search places ranks in the default order.
    sv.change = describe_group(in, p.group, p.value, stride_of(q.layout, dim, TimeOptions{}.order));
  }
  return sv;
}

// The probes are independent searches (each reads what the main search learned, none writes): the runner's
// workers take them one at a time, each searching on its own thread, and the lines keep the probes' order.
void sensitivity(const PlanInputs& in, const Space& space, const Plan& win, const search::ChoiceBests& bests,
                 const search::BoundMemo& memo, const ParallelRunner& runner, PlanResult& r) {
  const std::vector<Probe> probes = sensitivity_probes(space, win);
  std::vector<std::optional<Sensitivity>> lines(probes.size());
  std::vector<std::exception_ptr> failures(probes.size());
  std::atomic<std::size_t> next{0};
  const SequentialRunner one_thread;
  const int workers = std::max(1, std::min<int>(runner.workers(in.threads), static_cast<int>(probes.size())));
  runner.run(workers, [&](int) {
    for (std::size_t i = next.fetch_add(1); i < probes.size(); i = next.fetch_add(1)) {
      try {
        lines[i] = probe_result(in, space, probes[i], win, bests, memo, one_thread);
      } catch (...) {
        failures[i] = std::current_exception();   // rethrown on the calling thread, the first in probe order
      }
    }
  });
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (failures[i]) std::rethrow_exception(failures[i]);
    if (lines[i]) r.sensitivity.push_back(std::move(*lines[i]));
  }
}

// When nothing fits: for every shape and ZeRO/offload choice the least-memory variant (smallest micro-batch,
// sequence parallelism, every layer recomputed), the closest to fitting first: the smallest share of its tightest
// capacity, GPU memory or (offloaded) the host's memory or drives.
void near_misses(const Evaluator& ev, const Space& space, std::size_t k, PlanResult& r) {
  std::vector<Candidate> all;
  for (std::size_t i = 0; i < space.shapes().size(); ++i) {
    const Shape& s = space.shapes()[i];
    const memory::MemoryModel memory_model = ev.memory_model(s);
    const std::int64_t mb = space.micro_batches()[i].front();
    const auto& spov = space.spov(s);
    const bool sp = std::any_of(spov.begin(), spov.end(), [](const auto& x) { return x.first; });
    Variant v;
    v.micro_batch = mb;
    v.sequence_parallel = sp;
    v.recompute = space.rc_full() ? Recompute::full : (space.rc_selective() ? Recompute::selective : Recompute::none);
    v.recompute_layers = -1;
    const memory::ActivationTable acts =
        memory_model.activations(mb, sp, v.recompute == Recompute::selective);
    for (std::size_t z = 0; z < space.zero_offload().size(); ++z) {
      if (!search::Space::runs(s, z)) continue;
      const auto& zo = space.zero_offload()[z];
      v.zero = zo.zero;
      v.offload = zo.offload;
      v.offload_target = zo.target;
      Candidate c;
      c.shape_index = i;
      c.variant = v;
      const memory::MemoryPeak peak = memory_model.peak(acts, v);
      c.memory_bytes = peak.total;
      c.score = ev.fill_fraction(peak);
      c.key = search::key_of(s, v);
      all.push_back(c);
    }
  }
  std::sort(all.begin(), all.end(), search::better);
  for (std::size_t j = 0; j < all.size() && r.near_misses.size() < k; ++j) {
    const Shape& s = space.shapes()[all[j].shape_index];
    r.near_misses.push_back(make_plan(ev, s, all[j].variant, all[j].memory_bytes, true));
  }
}

}  // namespace

std::uint64_t count_space(const PlanInputs& inputs) {
  Evaluator ev(inputs);
  return Space(ev).total();
}

PlanResult search_plans(const PlanInputs& inputs, ProgressCallback progress, const ParallelRunner* runner) {
  const SequentialRunner sequential;
  const ParallelRunner& run = runner != nullptr ? *runner : sequential;
  const auto start = std::chrono::steady_clock::now();
  if (inputs.top_k < 1) throw InputError("ranking.top", std::to_string(inputs.top_k), "1 or more");
  if (inputs.objective == Objective::cost && !(inputs.price_per_gpu_hour > 0))
    throw InputError("ranking.price_per_gpu_hour", fmt::format("{}", inputs.price_per_gpu_hour),
                     "a positive price with --objective cost");
  Evaluator ev(inputs);
  Space space(ev);
  PlanResult r;
  r.space = space.total();
  if (space.shapes().empty()) {
    const Framework framework = inputs.base.layout.framework;
    throw InputError("layout filters",
                     fmt::format("no layout satisfies the model, the GPU count, the global batch, the filters and "
                                 "the rules of framework {} (docs/frameworks.md)", framework::name_of(framework)),
                     "filters that leave at least one layout (e.g. drop --tp/--pp lists, or another --framework)");
  }
  const std::size_t k = static_cast<std::size_t>(inputs.top_k);
  // "Why #1 wins" compares with the best runner-up, whatever the number of plans shown.
  const std::size_t searched = inputs.explain ? std::max<std::size_t>(k, 2) : k;
  // The sensitivity's searches read the item bounds the main search computed.
  search::BoundMemo memo;
  search::SearchOutcome o =
      search::run_search(space, searched, run, progress, std::numeric_limits<double>::infinity(),
                         {nullptr, inputs.explain ? &memo : nullptr});
  r.evaluated = o.stats.evaluated;
  r.feasible = o.stats.feasible;
  r.timed = o.stats.timed;
  r.pruned_states = o.stats.pruned_states;
  r.pruned_time = o.stats.pruned_time;
  for (const Candidate& c : o.top) {
    const Shape& s = space.shapes()[c.shape_index];
    r.plans.push_back(make_plan(ev, s, c.variant, c.memory_bytes, true));
    for (const Variant& v : sorted_equivalents(s, c.equivalents))
      r.plans.back().equivalents.push_back(ev.layout_of(s, v));
  }
  if (r.plans.empty()) {
    near_misses(ev, space, k, r);
  } else if (inputs.explain) {
    if (r.plans.size() >= 2) r.why_winner = why(r.plans[0], r.plans[1]);
    else r.why_winner.push_back("the only layout that fits");
    sensitivity(inputs, space, r.plans[0], o.choice_bests, memo, run, r);
  }
  if (r.plans.size() > k) r.plans.resize(k);
  r.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Plan evaluate_layout(const PlanInputs& inputs, const Layout& layout, std::int64_t micro_batch, bool tp_overlap) {
  Evaluator ev(inputs);
  MemoryInputs mi = inputs.base;
  mi.layout = layout;
  mi.training.micro_batch = micro_batch;
  const Layout l = resolve_layout(mi);
  if (mi.training.global_batch <= 0) throw InputError("training.global_batch", "0", "a global batch in sequences");
  Shape s;
  s.gpus = l.gpus;
  s.tp = l.tp;
  s.cp = l.cp;
  s.cp_comm = l.cp_comm;
  s.cp_a2a = l.cp_a2a;
  s.pp = l.pp;
  s.vpp = l.vpp;
  s.ep = l.ep;
  s.etp = l.etp;
  s.dp = l.dp;
  s.layers_per_stage = memory::pipeline_split(ev.model().layers, l).most_layers();
  s.first_stage_layers = l.first_stage_layers;
  s.last_stage_layers = l.last_stage_layers;
  Variant v;
  static_cast<memory::MemoryVariant&>(v) = memory::variant_of(l, micro_batch);
  v.sequence_parallel = l.sequence_parallel && l.tp > 1;
  v.tp_overlap = tp_overlap && v.sequence_parallel;
  const memory::MemoryModel memory_model = ev.memory_model(s);
  const memory::ActivationTable acts =
      memory_model.activations(micro_batch, v.sequence_parallel, v.recompute == Recompute::selective);
  return make_plan(ev, s, v, memory_model.peak(acts, v).total, false);
}

}  // namespace gpuplan
