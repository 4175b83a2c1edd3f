// gpuplan size after its searches: each point priced (days, GPU-hours, cost, energy), the time-versus-cost front,
// the headline answers and the assumptions behind them.
#include "api/size_answers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "gpuplan/units.hpp"

namespace gpuplan::api::detail {

namespace {

double overhead_of(const SizeRequest& r, const SizedPoint& p) {
  return r.power_overhead.value_or(p.host_overhead.value_or(0));
}

void price_point(const SizeRequest& r, const SizeSweep& s, SizedPoint& p) {
  SizePoint& point = p.point;
  if (!point.fits) return;
  const sizing::TokenBudget budget{s.tokens, static_cast<double>(s.global_batch * r.training.seq_len), r.goodput,
                                   r.checkpoint_overhead};
  const sizing::RunLength run = sizing::run_length(point.step_s, point.gpus, budget);
  point.days = run.days;
  point.gpu_hours = run.gpu_hours;
  if (const auto price = s.prices.find(point.system); price != s.prices.end())
    point.cost_dollars = run.gpu_hours * price->second;
  point.energy_MWh = sizing::energy_MWh(run.seconds, point.gpus, p.board_power_W, overhead_of(r, p));
  point.meets_deadline = !s.deadline_days || point.days <= *s.deadline_days;
}

// The points of each system whose predicted MFU (counting causal attention's FLOPs) is above the best published
// for its GPU, as `estimate` and `plan` warn of one: those step times are optimistic. One warning per system.
std::vector<std::string> mfu_warnings(const SizeSweep& s, const std::vector<SizedPoint>& points) {
  std::vector<std::string> out;
  for (const std::string& system : s.systems) {
    const GpuSpec& gpu = s.catalog->gpu(s.catalog->system(system).gpu);
    if (gpu.best_published_mfu_causal <= 0) continue;
    int above = 0, priced = 0;
    const SizedPoint* highest = nullptr;
    for (const SizedPoint& p : points) {
      if (p.point.system != system || !p.point.fits) continue;
      ++priced;
      if (p.point.mfu_causal <= gpu.best_published_mfu_causal) continue;
      ++above;
      if (highest == nullptr || p.point.mfu_causal > highest->point.mfu_causal) highest = &p;
    }
    if (highest == nullptr) continue;
    const auto source = gpu.field_sources.find("best_published_mfu_causal");
    out.push_back(fmt::format(
        "{}: {} of its {} points predict an MFU above the best published for {} ({:.1f} % counting causal "
        "attention's FLOPs, {}), up to {:.1f} % at {}: treat those step times as optimistic",
        system, above, priced, gpu.name, 100 * gpu.best_published_mfu_causal,
        source == gpu.field_sources.end() ? "catalog" : source->second, 100 * highest->point.mfu_causal,
        format_quantity(highest->point.nodes, "node", "nodes")));
  }
  return out;
}

// Cost when every system has a price, else GPU-hours: the second axis of the front and of "cheapest".
bool every_system_priced(const SizeSweep& s) { return s.prices.size() == s.systems.size(); }

double spend(const SizePoint& p) { return p.cost_dollars.value_or(p.gpu_hours); }

void mark_front(const SizeSweep& s, std::vector<SizedPoint>& points) {
  std::vector<double> days, cost;
  std::vector<bool> fits;
  for (const SizedPoint& p : points) {
    days.push_back(p.point.days);
    cost.push_back(every_system_priced(s) ? spend(p.point) : p.point.gpu_hours);
    fits.push_back(p.point.fits);
  }
  const std::vector<bool> front = sizing::pareto_front(days, cost, fits);
  for (std::size_t i = 0; i < points.size(); ++i) points[i].point.pareto = front[i];
}

std::string describe(const SizePoint& p) {
  std::string text = fmt::format("{} x {} ({}): {:.1f} days, {} GPU-hours", p.system,
                                 format_quantity(p.nodes, "node", "nodes"), format_quantity(p.gpus, "GPU", "GPUs"),
                                 p.days, format_count(p.gpu_hours));
  if (p.cost_dollars) text += fmt::format(", ${}", format_count(*p.cost_dollars));
  if (p.energy_MWh > 0) text += fmt::format(", {:.0f} MWh", p.energy_MWh);
  return text;
}

// The point that fits (and meets the deadline when `in_time`) with the least `measure`; none when no point does.
template <typename Measure>
std::optional<std::int64_t> least(const std::vector<SizedPoint>& points, bool in_time, Measure measure,
                                  std::string_view system = {}) {
  std::optional<std::int64_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const SizePoint& p = points[i].point;
    if (!p.fits || (in_time && !p.meets_deadline) || (!system.empty() && p.system != system)) continue;
    if (!best || measure(p) < measure(points[static_cast<std::size_t>(*best)].point))
      best = static_cast<std::int64_t>(i);
  }
  return best;
}

SizeHeadline headline(const std::vector<SizedPoint>& points, std::string question, std::optional<std::int64_t> at,
                      std::string_view otherwise) {
  return SizeHeadline{std::move(question), at,
                      at ? describe(points[static_cast<std::size_t>(*at)].point) : std::string(otherwise)};
}

std::vector<SizeHeadline> headlines(const SizeSweep& s, const std::vector<SizedPoint>& points) {
  std::vector<SizeHeadline> out;
  const bool deadline = s.deadline_days.has_value();
  const std::string within = deadline ? fmt::format(" that meets the {:g}-day deadline", *s.deadline_days) : "";
  const auto nodes = [](const SizePoint& p) { return static_cast<double>(p.nodes); };
  for (const std::string& system : s.systems)
    out.push_back(headline(points, fmt::format("smallest {} cluster{}", system, deadline ? within : " that fits"),
                           least(points, deadline, nodes, system),
                           deadline ? "none in the sweep meets the deadline" : "none in the sweep fits"));
  const bool priced = every_system_priced(s);
  out.push_back(headline(points, (priced ? "cheapest overall" : "fewest GPU-hours overall (no prices given)") + within,
                         least(points, deadline, spend), "none"));
  out.push_back(headline(points, "fastest overall", least(points, false, [](const SizePoint& p) { return p.days; }),
                         "none fits"));
  const auto objective = [&](const SizePoint& p) {
    switch (s.objective) {
      case sizing::Objective::cost: return spend(p);
      case sizing::Objective::energy: return p.energy_MWh;
      case sizing::Objective::time: break;
    }
    return p.days;
  };
  const char* name = s.objective == sizing::Objective::cost     ? "cost"
                     : s.objective == sizing::Objective::energy ? "energy"
                                                                : "time";
  out.push_back(headline(points, fmt::format("recommended (least {}{})", name, within),
                         least(points, deadline, objective), "none"));
  return out;
}

}  // namespace

SizeResult size_answers(const SizeRequest& r, const SizeSweep& s, std::vector<SizedPoint>& points) {
  SizeResult out;
  for (SizedPoint& p : points) price_point(r, s, p);
  mark_front(s, points);
  for (const SizedPoint& p : points) {
    out.points.push_back(p.point);
    out.layouts_evaluated += p.evaluated;
  }
  out.job = size_job(r, s, points);
  out.headlines = headlines(s, points);
  out.notes = size_notes(r, s, points);
  out.warnings = s.warnings;
  for (std::string& w : mfu_warnings(s, points)) out.warnings.push_back(std::move(w));
  if (r.explain) out.explanation = explain_curves(s, points);
  if (r.chart) out.chart_svg = size_chart_svg(out);
  return out;
}

}  // namespace gpuplan::api::detail
