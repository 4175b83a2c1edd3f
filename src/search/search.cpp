// The layout search: lazy enumeration of the space, exact count, evaluation by workers (one after another, or on
// threads the host layer provides) with pruning that never discards a layout that could enter the top k (memory
// lower bounds before activations, estimate_step's lower bound against the current k-th best, monotonicity of
// memory and of that bound in the number of recomputed layers). Every layout that is ranked is timed by
// estimate_step itself.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "framework/rules.hpp"
#include "perf/step_floor.hpp"
#include "gpuplan/error.hpp"
#include "search/search_internal.hpp"

namespace gpuplan::search {

namespace {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d) out.push_back(n / d);
    }
  std::sort(out.begin(), out.end());
  return out;
}

bool allowed(const std::vector<std::int64_t>& list, std::int64_t v, std::int64_t max = 0) {
  if (max > 0 && v > max) return false;
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

}  // namespace

void Space::check_filters() const {
  const PlanInputs& in = ev_.inputs();
  const TrainingConfig& tr = in.base.training;
  if (tr.global_batch <= 0)
    throw InputError("training.global_batch", std::to_string(tr.global_batch),
                     "a global batch in sequences (the search keeps it fixed)");
  for (int z : in.space.zero)
    if (z < 0 || z > 3) throw InputError("space.zero", std::to_string(z), "stages 0 to 3");
}

Space::Space(const Evaluator& ev) : ev_(ev), cp_floor_(ev.estimate_inputs()) {
  check_filters();
  choose_variants(ev.inputs().space);
  add_all_shapes();
}

void Space::add_all_shapes() {
  const PlanInputs& in = ev_.inputs();
  // GPU counts: the whole cluster, or with --objective cost every whole number of nodes up to it.
  const std::int64_t per_node = std::max(1, in.fabric.gpus_per_node);
  if (in.objective == Objective::cost && in.gpus <= 0 && ev_.total_gpus() % per_node == 0) {
    for (std::int64_t n = 1; n * per_node <= ev_.total_gpus(); ++n) add_shapes(n * per_node);
  } else {
    add_shapes(ev_.total_gpus());
  }
}

Space::Space(const Evaluator& ev, const Space& wider) : ev_(ev), cp_floor_(ev.estimate_inputs()) {
  check_filters();
  const SearchSpace& f = ev.inputs().space;
  choose_variants(f);
  // Where each ZeRO/offload choice of this space sits among the wider space's.
  std::vector<std::size_t> in_wider;
  for (const ZeroOffload& zo : zo_) {
    const auto same = [&](const ZeroOffload& w) {
      return w.zero == zo.zero && w.offload == zo.offload && w.target == zo.target;
    };
    const auto it = std::find_if(wider.zo_.begin(), wider.zo_.end(), same);
    if (it == wider.zo_.end()) {   // a ZeRO stage or offload the wider space left out: its verdicts are not known
      add_all_shapes();
      return;
    }
    in_wider.push_back(static_cast<std::size_t>(it - wider.zo_.begin()));
  }
  index_of_wider_.assign(wider.shapes_.size(), -1);
  for (std::size_t i = 0; i < wider.shapes_.size(); ++i) {
    Shape s = wider.shapes_[i];
    if (!keeps(s)) continue;
    s.zero_offload_mask = 0;
    for (std::size_t z = 0; z < in_wider.size(); ++z)
      if (runs(wider.shapes_[i], in_wider[z])) s.zero_offload_mask |= 1u << z;
    std::vector<std::int64_t> mbs;
    for (std::int64_t mb : wider.mbs_[i])
      if (allowed(f.micro_batch, mb)) mbs.push_back(mb);
    const std::uint64_t per_mb = inner_count(s);
    if (mbs.empty() || per_mb == 0) continue;
    index_of_wider_[i] = static_cast<std::int64_t>(shapes_.size());
    shapes_.push_back(s);
    mbs_.push_back(std::move(mbs));
    total_ += per_mb * mbs_.back().size();
  }
}

bool Space::keeps(const Shape& s) const {
  const SearchSpace& f = ev_.inputs().space;
  return allowed(f.tp, s.tp, f.max_tp) && allowed(f.cp, s.cp, f.max_cp) && allowed(f.pp, s.pp, f.max_pp) &&
         allowed(f.dp, s.dp) && allowed(f.vpp, s.vpp, f.max_vpp) && allowed(f.ep, s.ep) && allowed(f.etp, s.etp);
}

// Variants inside a shape (independent of the shape except for TP > 1 and layers per stage).
void Space::choose_variants(const SearchSpace& f) {
  for (int z = 0; z <= 3; ++z) {
    if (!f.zero.empty() && std::find(f.zero.begin(), f.zero.end(), z) == f.zero.end()) continue;
    zo_.push_back({z, Offload::none, OffloadTarget::cpu});
    if (!f.offload || z == 0) continue;
    zo_.push_back({z, Offload::optimizer, OffloadTarget::cpu});
    if (z == 3) {
      // NVMe offload is priced from the node's drives: only where the catalog (or --catalog) states their rates.
      const NodeStorage& node = ev_.inputs().base.node;
      const bool nvme = node.nvme_read_GBps > 0 && node.nvme_write_GBps > 0;
      if (nvme) zo_.push_back({z, Offload::optimizer, OffloadTarget::nvme});
      zo_.push_back({z, Offload::optimizer_and_params, OffloadTarget::cpu});
      if (nvme) zo_.push_back({z, Offload::optimizer_and_params, OffloadTarget::nvme});
    }
  }
  // What the framework's rules (src/framework/rules.cpp) forbid in every shape: DeepSpeed has no sequence
  // parallelism and recomputes whole layers; torchtitan shards the sequence whenever TP splits a layer and
  // recomputes every block or none, and runs asynchronous TP only in a compiled model (--compile), so that eager
  // and compiled layouts are not compared with each other.
  const Framework framework = ev_.inputs().base.layout.framework;
  const auto framework_allows_sp = [framework](bool sp) {
    return framework == Framework::deepspeed ? !sp : framework == Framework::torchtitan ? sp : true;
  };
  const bool overlap_runs = framework != Framework::torchtitan || ev_.inputs().base.training.compile;
  auto has_bool = [](const std::vector<bool>& list, bool v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  for (bool sp : {false, true})
    for (bool ov : {false, true}) {
      if (ov && (!sp || !overlap_runs)) continue;
      if (!has_bool(f.sequence_parallel, sp) || !framework_allows_sp(sp) || !has_bool(f.tp_overlap, ov)) continue;
      spov_tp_.push_back({sp, ov});
      if (!ov) spov_tp_no_overlap_.push_back({sp, ov});
      if (!sp && !ov) spov_1_.push_back({false, false});
    }
  // With TP = 1 sequence parallelism and TP overlap do not exist; the one choice is "off".
  if (spov_1_.empty() && !spov_tp_.empty()) spov_1_.push_back({false, false});
  auto has_rc = [&](Recompute r) {
    return f.recompute.empty() || std::find(f.recompute.begin(), f.recompute.end(), r) != f.recompute.end();
  };
  rc_none_ = has_rc(Recompute::none);
  rc_selective_ = has_rc(Recompute::selective) && framework != Framework::deepspeed;
  rc_full_ = has_rc(Recompute::full);
  partial_recompute_ = f.partial_recompute && framework != Framework::torchtitan;
}

bool Space::framework_allows(Shape& s) const {
  const PlanInputs& in = ev_.inputs();
  Layout layout = ev_.shape_layout(s);   // with the plainest variant: no sequence parallelism, no recompute
  const framework::JobFacts facts{&*in.base.model, &in.base.training, &layout};
  if (framework::first_broken(layout.framework, facts, framework::RuleLevel::shape) != nullptr) return false;
  s.zero_offload_mask = 0;
  for (std::size_t i = 0; i < zo_.size() && i < 32; ++i) {
    layout.zero = zo_[i].zero;
    layout.offload = zo_[i].offload;
    layout.offload_target = zo_[i].target;
    if (framework::first_broken(layout.framework, facts, framework::RuleLevel::states) == nullptr)
      s.zero_offload_mask |= 1u << i;
  }
  return s.zero_offload_mask != 0;
}

// How context-parallel attention can exchange the sequence at (tp, cp) (Megatron-LM's --cp-comm-type, checked as
// resolve_layout does): the ring always; without MLA the all-to-all where both head counts of a rank divide by cp,
// else the all-gather (as Llama 3's GQA training did); and a2a+p2p with the largest all-to-all group that stays
// inside a node, where the ring alone would leave the node. --cp-comm-type keeps the search to the types it lists
// (all_gather is searched beside a2a only when it is listed).
std::vector<std::pair<CpComm, std::int64_t>> Space::cp_exchanges(std::int64_t tp, std::int64_t cp) const {
  if (cp <= 1) return {{CpComm::p2p, 1}};
  const PlanInputs& in = ev_.inputs();
  const ModelConfig& m = ev_.model();
  const std::int64_t heads = m.heads / tp;
  const std::int64_t kv_heads = m.mla.enabled ? heads : std::max<std::int64_t>(1, m.kv_heads / tp);
  auto divides_heads = [&](std::int64_t group) { return heads % group == 0 && kv_heads % group == 0; };
  std::vector<std::pair<CpComm, std::int64_t>> out{{CpComm::p2p, 1}};
  if (!m.mla.enabled) out.push_back({divides_heads(cp) ? CpComm::a2a : CpComm::all_gather, 1});
  const std::int64_t node = std::max(1, in.fabric.gpus_per_node);
  if (tp * cp > node) {
    std::int64_t best = 1;
    for (std::int64_t a : divisors(cp))
      if (a > 1 && a < cp && tp * a <= node && divides_heads(a)) best = a;
    if (best > 1) out.push_back({CpComm::a2a_p2p, best});
  }
  const std::vector<CpComm>& kept = in.space.cp_comm;
  const bool gather_asked = std::find(kept.begin(), kept.end(), CpComm::all_gather) != kept.end();
  if (gather_asked && !m.mla.enabled && out[1].first == CpComm::a2a) out.push_back({CpComm::all_gather, 1});
  if (!kept.empty())
    std::erase_if(out, [&](const auto& e) { return std::find(kept.begin(), kept.end(), e.first) == kept.end(); });
  return out;
}

// Of the exchanges cp_exchanges offers for a shape, the one whose attention and CP communication take least in a
// layer (at the smallest micro-batch): nothing else in a step depends on it, and its memory differs from the
// ring's by a copy of the attention output at most. --cp-comm-type p2p keeps the ring where it matters.
std::pair<CpComm, std::int64_t> Space::fastest_cp_exchange(const Shape& shape) {
  const auto options = cp_exchanges(shape.tp, shape.cp);
  if (options.size() <= 1) return options.empty() ? std::pair{CpComm::p2p, std::int64_t{1}} : options.front();
  EstimateInputs est = ev_.estimate_inputs();
  Variant plain;
  plain.micro_batch = 1;
  std::pair<CpComm, std::int64_t> best = options.front();
  double best_s = std::numeric_limits<double>::infinity();
  for (const auto& option : options) {
    Shape s = shape;
    std::tie(s.cp_comm, s.cp_a2a) = option;
    ev_.set_layout(est, s, plain);
    const double t = cp_floor_.attention_with_cp_s(est, ev_.step_job().perf);
    if (t < best_s) {
      best_s = t;
      best = option;
    }
  }
  return best;
}

// Every (tp, cp, pp) that the heads, the sequence and the layers allow on `gpus`, data parallelism filling the rest.
void Space::add_shapes(std::int64_t gpus) {
  const SearchSpace& f = ev_.inputs().space;
  const ModelConfig& m = ev_.model();
  const TrainingConfig& tr = ev_.inputs().base.training;
  for (std::int64_t tp : divisors(gpus)) {
    if (!allowed(f.tp, tp, f.max_tp) || m.heads % tp != 0) continue;
    if (!m.mla.enabled && m.kv_heads % tp != 0 && tp % m.kv_heads != 0) continue;
    for (std::int64_t cp : divisors(gpus / tp)) {
      if (!allowed(f.cp, cp, f.max_cp) || tr.seq_len % cp != 0) continue;
      for (std::int64_t pp : divisors(gpus / (tp * cp))) {
        if (!allowed(f.pp, pp, f.max_pp) || pp > m.layers) continue;
        const std::int64_t dp = gpus / (tp * cp * pp);
        if (!allowed(f.dp, dp) || tr.global_batch % dp != 0) continue;
        Shape s;
        s.gpus = gpus;
        s.tp = tp;
        s.cp = cp;
        s.pp = pp;
        s.dp = dp;
        std::tie(s.cp_comm, s.cp_a2a) = fastest_cp_exchange(s);
        add_pipeline_splits(s);
      }
    }
  }
}

// The shape with each interleaving of its pipeline: even splits over pp x vpp chunks where the layers divide;
// where they do not, Megatron-Core's uneven split (lighter first and last ranks, memory::lighter_ends) with each
// vpp that divides the middle ranks' layers.
void Space::add_pipeline_splits(Shape s) {
  const SearchSpace& f = ev_.inputs().space;
  const std::int64_t layers = ev_.model().layers;
  const bool even = layers % s.pp == 0;
  const std::int64_t middle = (layers + s.pp - 1) / s.pp;
  for (std::int64_t vpp = 1; vpp * s.pp <= layers; ++vpp) {
    if (s.pp == 1 && vpp > 1) break;
    if (!allowed(f.vpp, vpp, f.max_vpp)) continue;
    s.vpp = vpp;
    if (even) {
      if (layers % (s.pp * vpp) != 0) continue;
      s.layers_per_stage = layers / s.pp;
    } else {
      if (middle % vpp != 0) continue;
      const auto [first, last] = memory::lighter_ends(layers, s.pp, vpp);
      if (first < 0) continue;
      s.first_stage_layers = first;
      s.last_stage_layers = last;
      s.layers_per_stage = middle;
    }
    add_expert_shapes(s);
  }
}

// The shape with each expert parallelism and expert tensor parallelism the experts and the stage's GPUs allow.
void Space::add_expert_shapes(Shape s) {
  const SearchSpace& f = ev_.inputs().space;
  const ModelConfig& m = ev_.model();
  std::vector<std::pair<std::int64_t, std::int64_t>> experts;
  if (!m.is_moe()) {
    if (allowed(f.ep, 1) && allowed(f.etp, s.tp)) experts.push_back({1, s.tp});
  } else {
    for (std::int64_t ep : divisors(m.moe.routed_experts)) {
      if (!allowed(f.ep, ep)) continue;
      for (std::int64_t etp : divisors(s.tp))
        if (allowed(f.etp, etp) && (s.tp * s.cp * s.dp) % (ep * etp) == 0) experts.push_back({ep, etp});
    }
  }
  const TrainingConfig& tr = ev_.inputs().base.training;
  for (const auto& [ep, etp] : experts) {
    s.ep = ep;
    s.etp = etp;
    std::vector<std::int64_t> mbs;
    for (std::int64_t mb : divisors(tr.global_batch / s.dp)) {
      if (!allowed(f.micro_batch, mb)) continue;
      if (s.vpp > 1 && (tr.global_batch / (s.dp * mb)) % s.pp != 0) continue;   // Megatron's interleaving rule
      mbs.push_back(mb);
    }
    if (mbs.empty() || !framework_allows(s)) continue;
    const std::uint64_t per_mb = inner_count(s);
    if (per_mb == 0) continue;
    shapes_.push_back(s);
    mbs_.push_back(std::move(mbs));
    total_ += per_mb * mbs_.back().size();
  }
}

std::uint64_t Space::rc_count(const Shape& s) const {
  std::uint64_t n = (rc_none_ ? 1 : 0) + (rc_selective_ ? 1 : 0);
  if (rc_full_) n += partial_recompute_ ? static_cast<std::uint64_t>(s.layers_per_stage) : 1;
  return n;
}

std::uint64_t Space::inner_count(const Shape& s) const {
  std::uint64_t choices = 0;
  for (std::size_t i = 0; i < zo_.size(); ++i) choices += runs(s, i) ? 1 : 0;
  return choices * spov(s).size() * rc_count(s);
}

// TP communication overlap (Megatron-LM / Transformer Engine userbuffers) needs the TP group inside one NVLink
// domain of one node; elsewhere it is not a choice.
const std::vector<std::pair<bool, bool>>& Space::spov(const Shape& s) const {
  if (s.tp <= 1) return spov_1_;
  const Fabric& f = ev_.inputs().fabric;
  const bool nvlink = f.domain_per_gpu_GBps > 0 && s.tp <= std::max(1, f.domain_size) &&
                      s.tp <= std::max(1, f.gpus_per_node);
  return nvlink ? spov_tp_ : spov_tp_no_overlap_;
}

bool better(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score < b.score;
  return a.key < b.key;
}

bool equivalent(const Candidate& a, const Candidate& b) {
  const Variant& x = a.variant;
  const Variant& y = b.variant;
  return a.shape_index == b.shape_index && a.score == b.score && a.step_s == b.step_s &&
         a.memory_bytes == b.memory_bytes && x.micro_batch == y.micro_batch &&
         x.sequence_parallel == y.sequence_parallel && x.tp_overlap == y.tp_overlap && x.recompute == y.recompute &&
         x.recompute_layers == y.recompute_layers;
}

bool recompute_count_siblings(const Candidate& a, const Candidate& b) {
  const Variant& x = a.variant;
  const Variant& y = b.variant;
  // No recomputation is full recomputation of no layer.
  auto counted = [](const Variant& v) { return v.recompute == Recompute::none || v.recompute == Recompute::full; };
  auto layers = [](const Variant& v) { return v.recompute == Recompute::none ? 0 : v.recompute_layers; };
  return a.shape_index == b.shape_index && counted(x) && counted(y) && layers(x) != layers(y) &&
         x.micro_batch == y.micro_batch &&
         x.sequence_parallel == y.sequence_parallel && x.tp_overlap == y.tp_overlap && x.zero == y.zero &&
         x.offload == y.offload && x.offload_target == y.offload_target;
}

namespace {

bool variant_level(Choice choice) {
  return choice == Choice::zero || choice == Choice::recompute || choice == Choice::sequence_parallel ||
         choice == Choice::offload;
}

}  // namespace

ChoiceBests::ChoiceBests() {
  for (auto& values : variant_bests_) values.fill(std::numeric_limits<double>::infinity());
}

void ChoiceBests::record(Choice choice, std::int64_t value, double score) {
  const auto index = static_cast<std::size_t>(choice);
  if (variant_level(choice)) {
    double& best = variant_bests_[index][static_cast<std::size_t>(value)];
    best = std::min(best, score);
    return;
  }
  for (auto& [known, best] : shape_bests_[index])
    if (known == value) {
      best = std::min(best, score);
      return;
    }
  shape_bests_[index].emplace_back(value, score);
}

void ChoiceBests::record_variant(const Variant& variant, double score) {
  record(Choice::zero, variant.zero, score);
  record(Choice::recompute, static_cast<std::int64_t>(variant.recompute), score);
  record(Choice::sequence_parallel, variant.sequence_parallel ? 1 : 0, score);
  record(Choice::offload, static_cast<std::int64_t>(variant.offload), score);
}

void ChoiceBests::record_shape(const Shape& shape, std::int64_t micro_batch, double best_score) {
  record(Choice::tp, shape.tp, best_score);
  record(Choice::pp, shape.pp, best_score);
  record(Choice::cp, shape.cp, best_score);
  record(Choice::ep, shape.ep, best_score);
  record(Choice::vpp, shape.vpp, best_score);
  record(Choice::micro_batch, micro_batch, best_score);
}

void ChoiceBests::merge(const ChoiceBests& other) {
  for (std::size_t choice = 0; choice < kChoices; ++choice) {
    for (const auto& [value, score] : other.shape_bests_[choice]) record(static_cast<Choice>(choice), value, score);
    for (std::size_t value = 0; value < kValues; ++value)
      variant_bests_[choice][value] = std::min(variant_bests_[choice][value], other.variant_bests_[choice][value]);
  }
}

double ChoiceBests::best(Choice choice, std::int64_t value) const {
  const auto index = static_cast<std::size_t>(choice);
  if (variant_level(choice))
    return value >= 0 && static_cast<std::size_t>(value) < kValues ? variant_bests_[index][static_cast<std::size_t>(value)]
                                                                    : std::numeric_limits<double>::infinity();
  for (const auto& [known, score] : shape_bests_[index])
    if (known == value) return score;
  return std::numeric_limits<double>::infinity();
}

namespace {

struct Shared {
  std::atomic<double> threshold{std::numeric_limits<double>::infinity()};
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> done{0};
};

void lower_threshold(std::atomic<double>& t, double v) {
  double cur = t.load(std::memory_order_relaxed);
  while (v < cur && !t.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

class Worker {
 public:
  // `known`: what the main search learned of the items (null: nothing); `learned`: where to keep what this
  // worker learns, by item (null: nowhere). Workers share it: each item is one worker's, so each element too.
  Worker(const Space& space, Shared& shared, std::size_t k, const BoundMemo* known, BoundMemo::ItemBounds* learned)
      : sp_(space), ev_(space.evaluator()), sh_(shared), k_(k), known_(known), learned_(learned),
        est_(space.evaluator().estimate_inputs()), step_floor_(space.evaluator().estimate_inputs()) {}

  void run(const std::vector<WorkItem>& items) {
    for (;;) {
      const std::size_t i = sh_.next.fetch_add(1, std::memory_order_relaxed);
      if (i >= items.size()) break;
      const std::uint64_t before = counted();
      item(items[i]);
      sh_.done.fetch_add(counted() - before, std::memory_order_relaxed);
      if (progress_ != nullptr && *progress_) maybe_report();
    }
  }

  // This worker calls `progress` with the layouts all workers have accounted for, at most ten times a second.
  void report_progress(const ProgressCallback* progress, std::uint64_t total) {
    progress_ = progress;
    total_ = total;
    last_report_ = std::chrono::steady_clock::now();
  }

  std::vector<Candidate> top;
  Stats stats;
  ChoiceBests choice_bests;

 private:
  std::uint64_t counted() const { return stats.evaluated + stats.pruned_states + stats.pruned_time; }

  void maybe_report() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report_ < std::chrono::milliseconds(100)) return;
    last_report_ = now;
    (*progress_)(sh_.done.load(std::memory_order_relaxed), total_);
  }

  void push(Candidate&& c) {
    // All variants of a layout come from one work item, so one worker sees every member of a group.
    if (top.size() < k_ || c.score <= top.back().score) {
      for (Candidate& kept : top)
        if (equivalent(kept, c)) return join(kept, std::move(c));
      for (Candidate& kept : top)
        if (recompute_count_siblings(kept, c)) return keep_better(kept, std::move(c));
    }
    if (top.size() == k_ && !better(c, top.back())) return;
    top.insert(std::upper_bound(top.begin(), top.end(), c, better), std::move(c));
    if (top.size() > k_) top.pop_back();
    if (top.size() == k_) lower_threshold(sh_.threshold, top.back().score);
  }

  // The better of the two leads the group (ties broken by key, so the result does not depend on the order).
  void join(Candidate& kept, Candidate&& c) {
    if (better(c, kept)) {
      c.equivalents = std::move(kept.equivalents);
      c.equivalents.push_back(kept.variant);
      kept = std::move(c);
      std::sort(top.begin(), top.end(), better);
    } else {
      kept.equivalents.push_back(c.variant);
    }
  }

  // One row per layout whatever its count of recomputed layers: the better sibling takes the other's place.
  void keep_better(Candidate& kept, Candidate&& c) {
    if (!better(c, kept)) return;
    kept = std::move(c);
    std::sort(top.begin(), top.end(), better);
    if (top.size() == k_) lower_threshold(sh_.threshold, top.back().score);
  }

  double threshold() const { return sh_.threshold.load(std::memory_order_relaxed); }

  const memory::ActivationTable& acts(const memory::MemoryModel& memory_model, std::int64_t mb, bool sp, bool selective) {
    const int idx = (sp ? 2 : 0) + (selective ? 1 : 0);
    if (!have_[idx]) {
      acts_[idx] = memory_model.activations(mb, sp, selective);
      have_[idx] = true;
    }
    return acts_[idx];
  }

  // Whether a layout's lower bound exceeds the k-th best: the bound of its (shape, micro-batch, sequence
  // parallelism, overlap) plus what its recomputation adds to step_time_lower_bound_s.
  bool time_pruned(const Shape& s, const Variant& v, double variant_bound, double plain_floor) {
    if (!ev_.inputs().prune) return false;
    double extra = 0;
    if (v.recompute == Recompute::full) {
      ev_.set_layout(est_, s, v);
      extra = std::max(0.0, ev_.step_lower_bound_s(est_) - plain_floor) * (1.0 - 1e-9);
    }
    return ev_.score(s, variant_bound + extra) > threshold();
  }

  // Evaluates one layout whose time bound passed: memory, and when it fits, estimate_step. True when it fits.
  bool evaluate(std::size_t shape_index, const Shape& s, const memory::MemoryModel& memory_model, const Variant& v,
                const memory::ActivationTable& a, const memory::MemoryPeak* known = nullptr) {
    ++stats.evaluated;
    const memory::MemoryPeak mem = known != nullptr ? *known : memory_model.peak(a, v);
    if (mem.total > ev_.usable_bytes() || !ev_.host_fits(mem)) return false;
    ++stats.feasible;
    ++stats.timed;
    ev_.set_layout(est_, s, v);
    Candidate c;
    c.shape_index = shape_index;
    c.variant = v;
    c.memory_bytes = mem.total;
    c.step_s = model(v.sequence_parallel, v.tp_overlap).time(est_.memory.layout).step_s;
    c.score = ev_.score(s, c.step_s);
    c.key = key_of(s, v);
    choice_bests.record_variant(v, c.score);
    item_best_ = std::min(item_best_, c.score);
    push(std::move(c));
    return true;
  }

  // One work item: a shape and a micro-batch, with the time bounds of its (sequence parallelism, overlap) choices.
  struct Item {
    std::size_t shape_index;
    const Shape& shape;
    std::int64_t micro_batch;
    std::size_t main_index;
    const memory::MemoryModel* memory = nullptr;   // built once the item's time bound passes
    double floor = 0;                      // the FLOP floor of the item's plainest layout
    double step_floor = 0;                 // its step floor (perf::StepFloor), over the item's choices
    BoundMemo::Bounds bounds{};            // per (sequence parallelism, overlap)
    double bound(const Variant& v) const { return bounds[(v.sequence_parallel ? 2u : 0u) + (v.tp_overlap ? 1u : 0u)]; }
  };

  void item(const WorkItem& work) {
    const Shape& s = sp_.shapes()[work.shape_index];
    const std::int64_t mb = work.micro_batch;
    if (ev_.inputs().prune && ev_.score(s, work.floor_with_bubble * (1.0 - 1e-9)) > threshold()) {
      stats.pruned_time += sp_.inner_count(s);   // the FLOP floor alone: no step model is built
      return;
    }
    const BoundMemo::ItemBounds* known = known_ != nullptr ? &known_->learned[work.main_index] : nullptr;
    if (known != nullptr && !known->floored) known = nullptr;
    Item it{work.shape_index, s, mb, work.main_index};
    it.floor = work.floor;
    if (ev_.inputs().prune) {
      it.step_floor = known != nullptr ? known->floor_s : step_floor(work);
      if (ev_.score(s, it.step_floor) > threshold()) {
        stats.pruned_time += sp_.inner_count(s);   // the step floor: no step model is built
        if (known == nullptr && learned_ != nullptr) learned_[it.main_index] = {true, it.step_floor};
        return;
      }
    }
    have_[0] = have_[1] = have_[2] = have_[3] = false;
    for (auto& m : models_) m.reset();
    if (ev_.inputs().prune && !bound_item(it, known != nullptr && known->modelled ? &known->bounds : nullptr)) return;
    const memory::MemoryModel memory_model = ev_.memory_model(s);
    it.memory = &memory_model;
    item_best_ = std::numeric_limits<double>::infinity();
    const auto& spov = sp_.spov(s);
    const double usable = static_cast<double>(ev_.usable_bytes());
    for (std::size_t z = 0; z < sp_.zero_offload().size(); ++z) {
      if (!Space::runs(s, z)) continue;
      const ZeroOffload& zo = sp_.zero_offload()[z];
      if (ev_.inputs().prune && memory_model.states_lower_bound(zo.zero, zo.offload) * (1.0 - 1e-12) > usable) {
        stats.pruned_states += spov.size() * sp_.rc_count(s);
        continue;
      }
      for (const auto& [sp, ov] : spov) {
        Variant v;
        v.micro_batch = mb;
        v.sequence_parallel = sp;
        v.tp_overlap = ov;
        v.zero = zo.zero;
        v.offload = zo.offload;
        v.offload_target = zo.target;
        recompute_variants(it, v);
      }
    }
    if (item_best_ < std::numeric_limits<double>::infinity()) choice_bests.record_shape(s, mb, item_best_);
  }

  // The least step floor of the item's (sequence parallelism, overlap) choices.
  double step_floor(const WorkItem& work) {
    const Shape& s = sp_.shapes()[work.shape_index];
    Variant probe;
    probe.micro_batch = work.micro_batch;
    ev_.set_layout(est_, s, probe);
    return step_floor_.bound_s(est_, ev_.step_job().perf, work.floor, sp_.spov(s));
  }

  // The lower bounds of every (sequence parallelism, overlap) choice of the item (read from `known` when an
  // earlier search computed them); false when none can beat the k-th best, and the whole item is skipped.
  bool bound_item(Item& it, const BoundMemo::Bounds* known) {
    Variant plain;
    plain.micro_batch = it.micro_batch;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [sp, ov] : sp_.spov(it.shape)) {
      const std::size_t index = (sp ? 2u : 0u) + (ov ? 1u : 0u);
      double& b = it.bounds[index];
      if (known != nullptr) {
        b = (*known)[index];
      } else {
        Variant probe = plain;
        probe.sequence_parallel = sp;
        probe.tp_overlap = ov;
        ev_.set_layout(est_, it.shape, probe);
        b = Evaluator::variant_lower_bound_s(model(sp, ov));
      }
      best = std::min(best, b);
    }
    if (known == nullptr && learned_ != nullptr) learned_[it.main_index] = {true, it.step_floor, true, it.bounds};
    if (ev_.score(it.shape, best) <= threshold()) return true;
    stats.pruned_time += sp_.inner_count(it.shape);
    return false;
  }

  bool bound_prunes(const Item& it, Variant v, Recompute r, std::int64_t layers) {
    v.recompute = r;
    v.recompute_layers = layers;
    return time_pruned(it.shape, v, it.bound(v), it.floor);
  }

  // No recomputation, selective, and full recomputation of 1 .. all layers of a stage.
  void recompute_variants(const Item& it, Variant v) {
    const bool sp = v.sequence_parallel;
    if (sp_.rc_none()) {
      v.recompute = Recompute::none;
      v.recompute_layers = -1;
      if (bound_prunes(it, v, Recompute::none, -1)) ++stats.pruned_time;
      else evaluate(it.shape_index, it.shape, *it.memory, v, acts(*it.memory, it.micro_batch, sp, false));
    }
    if (sp_.rc_selective()) {
      v.recompute = Recompute::selective;
      v.recompute_layers = -1;
      if (bound_prunes(it, v, Recompute::selective, -1)) ++stats.pruned_time;
      else evaluate(it.shape_index, it.shape, *it.memory, v, acts(*it.memory, it.micro_batch, sp, true));
    }
    if (!sp_.rc_full()) return;
    v.recompute = Recompute::full;
    const auto& a = acts(*it.memory, it.micro_batch, sp, false);
    const std::int64_t lps = it.shape.layers_per_stage;
    if (!sp_.partial_recompute()) {
      v.recompute_layers = -1;
      if (bound_prunes(it, v, Recompute::full, -1)) ++stats.pruned_time;
      else evaluate(it.shape_index, it.shape, *it.memory, v, a);
    } else if (!ev_.inputs().prune) {
      for (std::int64_t k = 1; k <= lps; ++k) {
        v.recompute_layers = k == lps ? -1 : k;
        evaluate(it.shape_index, it.shape, *it.memory, v, a);
      }
    } else {
      partial_recompute(it, v, a);
    }
  }

  // Memory shrinks with k (more recomputed layers) and the time lower bound grows with it: find the smallest k
  // that fits by bisection, then walk up while the bound can still beat the k-th best.
  void partial_recompute(const Item& it, Variant v, const memory::ActivationTable& a) {
    const std::int64_t lps = it.shape.layers_per_stage;
    auto layers_flag = [&](std::int64_t k) { return k == lps ? std::int64_t{-1} : k; };
    if (bound_prunes(it, v, Recompute::full, 1)) {
      stats.pruned_time += static_cast<std::uint64_t>(lps);
      return;
    }
    std::vector<std::int64_t> probed;
    auto mem_at = [&](std::int64_t k) {
      v.recompute_layers = layers_flag(k);
      probed.push_back(k);
      return it.memory->peak(a, v);
    };
    std::int64_t lo = 1, hi = lps;
    const memory::MemoryPeak m_all = mem_at(hi);
    if (m_all.total > ev_.usable_bytes()) {   // even all layers recomputed does not fit: no k does
      stats.evaluated += 1;
      stats.pruned_states += static_cast<std::uint64_t>(lps - 1);
      return;
    }
    memory::MemoryPeak m_fit = m_all;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      const memory::MemoryPeak mm = mem_at(mid);
      if (mm.total <= ev_.usable_bytes()) {
        hi = mid;
        m_fit = mm;
      } else {
        lo = mid + 1;
      }
    }
    // Probes below `hi` are evaluated layouts that do not fit; the other k below it are pruned by monotonicity;
    // k >= hi are accounted for in the walk.
    const auto below = static_cast<std::uint64_t>(
        std::count_if(probed.begin(), probed.end(), [&](std::int64_t k) { return k < hi; }));
    stats.evaluated += below;
    stats.pruned_states += static_cast<std::uint64_t>(hi - 1) - below;
    for (std::int64_t k = hi; k <= lps; ++k) {
      if (bound_prunes(it, v, Recompute::full, k)) {
        stats.pruned_time += static_cast<std::uint64_t>(lps - k + 1);
        break;
      }
      v.recompute_layers = layers_flag(k);
      evaluate(it.shape_index, it.shape, *it.memory, v, a, k == hi ? &m_fit : nullptr);
    }
  }

  const Space& sp_;
  const Evaluator& ev_;
  Shared& sh_;
  std::size_t k_;
  const BoundMemo* known_ = nullptr;
  BoundMemo::ItemBounds* learned_ = nullptr;
  const ProgressCallback* progress_ = nullptr;
  std::uint64_t total_ = 0;
  std::chrono::steady_clock::time_point last_report_;
  memory::ActivationTable acts_[4];
  bool have_[4] = {false, false, false, false};
  double item_best_ = 0;   // the best score timed in the current work item
  EstimateInputs est_;   // estimate_step's inputs, pointed at one layout at a time
  // The step models of the current item (shape and micro-batch), one per (sequence parallelism, TP overlap): every
  // ZeRO stage, offload and recomputation of the item is timed by one of them.
  std::array<std::unique_ptr<perf::StepModel>, 4> models_;
  perf::StepModel::ComputeMemo compute_memo_;   // the layer compute and stage contents this worker priced
  perf::StepFloor step_floor_;                  // the collectives this worker's floors priced

  // The model for `sp` and `tp_overlap`, built from est_ (which must hold a layout of the current item with them)
  // the first time it is asked for.
  const perf::StepModel& model(bool sp, bool tp_overlap) {
    auto& m = models_[(sp ? 2 : 0) + (tp_overlap ? 1 : 0)];
    if (!m) m = std::make_unique<perf::StepModel>(est_, ev_.step_job(), &compute_memo_);
    return *m;
  }
};

}  // namespace

std::array<std::int64_t, 15> key_of(const Shape& s, const Variant& v) {
  return {s.gpus, s.tp, s.cp, static_cast<std::int64_t>(s.cp_comm) * 65536 + s.cp_a2a, s.pp, s.vpp, s.ep, s.etp,
          v.micro_batch, v.zero, static_cast<std::int64_t>(v.offload),
          static_cast<std::int64_t>(v.offload_target), static_cast<std::int64_t>(v.recompute),
          v.recompute_layers < 0 ? std::numeric_limits<std::int64_t>::max() : v.recompute_layers,
          (v.sequence_parallel ? 2 : 0) + (v.tp_overlap ? 1 : 0)};
}

namespace {

// Work items: (shape, micro-batch), the most promising first so the k-th best tightens early (any order gives
// the same answer).
std::vector<WorkItem> ordered_items(const Space& space) {
  const Evaluator& ev = space.evaluator();
  std::size_t count = 0;
  for (const auto& mbs : space.micro_batches()) count += mbs.size();
  // Reserved at their final size: the items number tens of thousands, and a vector grown by doubling touches
  // twice the memory, each new page a page fault.
  std::vector<WorkItem> items;
  items.reserve(count);
  std::vector<std::pair<double, std::size_t>> order;   // (first bound, enumeration index): ties keep their order
  order.reserve(count);
  EstimateInputs est = ev.estimate_inputs();
  for (std::size_t i = 0; i < space.shapes().size(); ++i)
    for (std::int64_t mb : space.micro_batches()[i]) {
      const Shape& s = space.shapes()[i];
      Variant v;
      v.micro_batch = mb;
      ev.set_layout(est, s, v);
      WorkItem item{i, mb, ev.step_lower_bound_s(est), 0};
      const double microbatches = static_cast<double>(ev.microbatches(s, mb));
      item.floor_with_bubble =
          item.floor * (1.0 + static_cast<double>(s.pp - 1) / (static_cast<double>(s.vpp) * microbatches));
      order.emplace_back(ev.score(s, item.floor_with_bubble), items.size());
      items.push_back(item);
    }
  std::sort(order.begin(), order.end());
  std::vector<WorkItem> sorted;
  sorted.reserve(items.size());
  for (const auto& [bound, index] : order) {
    sorted.push_back(items[index]);
    sorted.back().main_index = sorted.size() - 1;
  }
  return sorted;
}

// The items of a space narrowed from the main search's (Space(ev, wider)): the main search's items whose shape
// and micro-batch it keeps, in the main search's order, which is the order ordered_items gives them.
std::vector<WorkItem> narrowed_items(const Space& space, const BoundMemo& main) {
  const std::vector<std::int64_t>& index = space.index_of_wider();
  std::vector<WorkItem> items;
  items.reserve(main.items.size());   // at most all of them; pages never written are never touched
  for (const WorkItem& w : main.items) {
    const std::int64_t mine = index[w.shape_index];
    if (mine < 0) continue;
    const auto& mbs = space.micro_batches()[static_cast<std::size_t>(mine)];
    if (std::find(mbs.begin(), mbs.end(), w.micro_batch) == mbs.end()) continue;
    items.push_back(w);
    items.back().shape_index = static_cast<std::size_t>(mine);
  }
  return items;
}

}  // namespace

SearchOutcome run_search(const Space& space, std::size_t k, const ParallelRunner& runner,
                         const ProgressCallback& progress, double known_best, BoundSharing memo) {
  // What the main search learned is read only by a space narrowed from it.
  const BoundMemo* known = memo.known != nullptr && memo.known->shapes == space.index_of_wider().size() &&
                                   !memo.known->items.empty()
                               ? memo.known
                               : nullptr;
  const std::vector<WorkItem> items = known != nullptr ? narrowed_items(space, *known) : ordered_items(space);
  Shared shared;
  shared.threshold = known_best;
  const int requested = runner.workers(space.evaluator().inputs().threads);
  const int n = std::max(1, std::min<int>(requested, static_cast<int>(std::max<std::size_t>(1, items.size()))));
  if (memo.record != nullptr) {
    memo.record->shapes = space.shapes().size();
    memo.record->items = items;
    memo.record->learned.assign(items.size(), {});
  }
  BoundMemo::ItemBounds* learned = memo.record != nullptr ? memo.record->learned.data() : nullptr;
  std::vector<Worker> workers;
  workers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) workers.emplace_back(space, shared, std::max<std::size_t>(1, k), known, learned);
  // Worker 0 reports the progress, so the callback is only ever called from one thread.
  workers[0].report_progress(&progress, space.total());
  runner.run(n, [&](int worker) { workers[static_cast<std::size_t>(worker)].run(items); });
  if (progress) progress(space.total(), space.total());
  SearchOutcome out;
  for (auto& w : workers) {
    out.stats.evaluated += w.stats.evaluated;
    out.stats.feasible += w.stats.feasible;
    out.stats.timed += w.stats.timed;
    out.stats.pruned_states += w.stats.pruned_states;
    out.stats.pruned_time += w.stats.pruned_time;
    for (auto& c : w.top) out.top.push_back(std::move(c));
    out.choice_bests.merge(w.choice_bests);
  }
  std::sort(out.top.begin(), out.top.end(), better);
  if (out.top.size() > k) out.top.resize(k);
  return out;
}

}  // namespace gpuplan::search
