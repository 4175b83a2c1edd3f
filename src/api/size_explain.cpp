// Why the curves of gpuplan size bend: read from the winners of neighbouring node counts of one system.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "api/size_answers.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api::detail {

namespace {

// GPUs that hold one copy of the model: the layout's model-parallel degree.
std::int64_t model_parallel(const PlanLayout& l) { return l.tp * l.cp * l.pp; }

std::string layout_words(const PlanLayout& l) {
  std::string words = fmt::format("TP {} x PP {}", l.tp, l.pp);
  if (l.cp > 1) words += fmt::format(" x CP {}", l.cp);
  if (l.ep > 1) words += fmt::format(", EP {}", l.ep);
  return words + fmt::format(", DP {}", l.dp);
}

// The step-time term whose share of the step grew most from `before` to `after`, with both shares.
std::string grown_term(const SizedPoint& before, const SizedPoint& after) {
  std::string name;
  double grew = 0, then = 0, now = 0;
  for (const auto& [term, seconds] : after.breakdown) {
    double earlier = 0;
    for (const auto& [old_term, old_seconds] : before.breakdown)
      if (old_term == term) earlier = old_seconds / before.point.step_s;
    const double share = seconds / after.point.step_s;
    if (share - earlier > grew) {
      grew = share - earlier;
      name = term;
      then = earlier;
      now = share;
    }
  }
  if (name.empty()) return "no step-time term grew";
  return fmt::format("{} grows from {:.0f} % to {:.0f} % of the step", name, 100 * then, 100 * now);
}

// What changed from one node count to the next, in words; empty when the curve simply goes on.
std::vector<std::string> bends(const SizeSweep& s, const SizedPoint& a, const SizedPoint& b) {
  std::vector<std::string> out;
  const SizePoint &p = a.point, &q = b.point;
  const std::string step = fmt::format("{} {} -> {} nodes", q.system, p.nodes, q.nodes);
  if (model_parallel(*q.layout) > model_parallel(*p.layout)) {
    const bool batch_bound = q.layout->dp * q.layout->micro_batch * q.layout->microbatches == s.global_batch &&
                             q.layout->microbatches <= q.layout->pp * q.layout->vpp;
    out.push_back(fmt::format("{}: model parallelism grows ({} -> {}): {}", step, layout_words(*p.layout),
                              layout_words(*q.layout),
                              batch_bound ? fmt::format("the global batch of {} sequences has no more replicas "
                                                        "to give",
                                                        s.global_batch)
                                          : std::string("the faster layout at this size")));
  }
  if (q.bubble_fraction > p.bubble_fraction + 0.05)
    out.push_back(fmt::format("{}: the pipeline bubble grows from {:.0f} % to {:.0f} % of the step ({} "
                              "micro-batches per pipeline of {} stages)",
                              step, 100 * p.bubble_fraction, 100 * q.bubble_fraction, q.layout->microbatches,
                              q.layout->pp));
  if (q.network_tier != p.network_tier && !q.network_tier.empty() && p.network_tier != "one node")
    out.push_back(fmt::format("{}: traffic now crosses the {} tier{}", step, q.network_tier,
                              q.nic_GBps < p.nic_GBps ? fmt::format(" ({:g} -> {:g} GB/s per GPU)", p.nic_GBps,
                                                                    q.nic_GBps)
                                                      : std::string(" (no bandwidth lost)")));
  const double ideal = static_cast<double>(q.nodes) / static_cast<double>(p.nodes);
  const double speedup = p.days / q.days;
  if (speedup < 1)
    out.push_back(fmt::format("{}: slower with more GPUs ({:.1f} -> {:.1f} days): {}", step, p.days, q.days,
                              grown_term(a, b)));
  else if (speedup / ideal < 0.8)
    out.push_back(fmt::format("{}: {:.0f} % scaling efficiency ({:.2f}x faster on {:g}x the GPUs): {}", step,
                              100 * speedup / ideal, speedup, ideal, grown_term(a, b)));
  return out;
}

// From the first point that fits to the last: how much of the added GPUs the time to train kept.
std::string overall(const SizedPoint& first, const SizedPoint& last) {
  const double gpus = static_cast<double>(last.point.gpus) / static_cast<double>(first.point.gpus);
  const double faster = first.point.days / last.point.days;
  return fmt::format("{} {} -> {} nodes overall: {:g}x the GPUs, {:.1f}x faster ({:.0f} % scaling efficiency)",
                     last.point.system, first.point.nodes, last.point.nodes, gpus, faster, 100 * faster / gpus);
}

}  // namespace

std::vector<std::string> explain_curves(const SizeSweep& s, const std::vector<SizedPoint>& points) {
  std::vector<std::string> out;
  for (const std::string& system : s.systems) {
    const SizedPoint* previous = nullptr;
    const SizedPoint* last_miss = nullptr;
    const SizedPoint* first = nullptr;
    for (const SizedPoint& p : points) {
      if (p.point.system != system) continue;
      if (!p.point.fits) {
        if (previous == nullptr) last_miss = &p;
        continue;
      }
      if (previous == nullptr) {
        first = &p;
        out.push_back(last_miss == nullptr
                          ? fmt::format("{}: fits from the smallest count tried, {}", system,
                                        format_quantity(p.point.nodes, "node", "nodes"))
                          : fmt::format("{}: fits from {} nodes; at {} nodes it {}", system, p.point.nodes,
                                        last_miss->point.nodes, last_miss->point.note));
      } else {
        for (std::string& line : bends(s, *previous, p)) out.push_back(std::move(line));
      }
      previous = &p;
    }
    if (previous == nullptr) out.push_back(fmt::format("{}: fits at no node count of the sweep", system));
    else if (previous != first) out.push_back(overall(*first, *previous));
  }
  return out;
}

}  // namespace gpuplan::api::detail
