// gpuplan size: the layout search of `gpuplan plan` for every system and node count of a sweep, and what training
// the token budget takes on each (days, GPU-hours, cost, energy), with the time-versus-cost front and the answers
// to the headline questions.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>

#include "api/builders.hpp"
#include "api/fields.hpp"
#include "api/plan_setup.hpp"
#include "api/resolve.hpp"
#include "api/size_answers.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"
#include "size/sizing.hpp"
#include "util/choices.hpp"

namespace gpuplan::api {

namespace {

constexpr const char* kDefaultSystems[] = {"dgx-h100", "dgx-h200", "dgx-b200", "mi300x-8x"};
constexpr const char* kDefaultBatchTokens = "4M";

using detail::SizeSweep;

// The systems compared, each checked against the catalog.
std::vector<std::string> sweep_systems(const SizeRequest& r, const HardwareCatalog& catalog) {
  std::vector<std::string> systems = r.systems;
  if (systems.empty()) systems.assign(std::begin(kDefaultSystems), std::end(kDefaultSystems));
  for (const std::string& name : systems)
    if (catalog.find_system(name) == nullptr)
      throw InputError("systems", fmt::format("'{}'", name),
                       fmt::format("catalog systems: {}", fmt::join(catalog.system_names(), ", ")));
  return systems;
}

// The global batch in sequences: given, or the batch in tokens over the sequence length rounded to the nearest
// power of two, so that every power-of-two data-parallel size divides it (16M tokens at 8192: 2048 sequences).
std::int64_t global_batch(const SizeRequest& r) {
  if (r.training.global_batch && r.global_batch_tokens)
    throw InputError("global_batch_tokens", *r.global_batch_tokens, "either it or training.global_batch, not both");
  if (r.training.global_batch) return *r.training.global_batch;
  const std::string tokens = r.global_batch_tokens.value_or(kDefaultBatchTokens);
  const double sequences = parse_count(tokens, "global_batch_tokens") / static_cast<double>(r.training.seq_len);
  if (!(sequences >= 0.75) || sequences > 1e9)
    throw InputError("global_batch_tokens", tokens,
                     fmt::format("at least one sequence ({} tokens) and at most 1e9 sequences", r.training.seq_len));
  return std::int64_t{1} << std::llround(std::log2(sequences));
}

SizeSweep sweep_of(const SizeRequest& r) {
  detail::check_bounds(r);
  if (!r.model.given()) throw InputError("model", "(none)", "a catalog name or a config.json path");
  if (!r.tokens) throw InputError("tokens", "(none)", "the tokens to train on, such as 15T or 300B");
  SizeSweep s;
  const ModelConfig model = detail::resolve_model(r.model, r.overrides);
  s.model = model.name;
  if (auto w = detail::sequence_warning(model, r.training.seq_len)) s.warnings.push_back(std::move(*w));
  // Every point's step time leaves out the same MoE host synchronization: said once for the sweep.
  const Framework framework = choices::parse(choices::kFramework, r.training.framework, "training.framework");
  if (auto w = detail::moe_host_sync_warning(model, detail::resolve_training(r.training), framework))
    s.warnings.push_back(std::move(*w));
  s.tokens = parse_count(*r.tokens, "tokens");
  if (!(s.tokens >= 1)) throw InputError("tokens", *r.tokens, "at least one token");
  s.catalog = detail::resolve_catalog(r.catalog, "catalog");
  s.systems = sweep_systems(r, *s.catalog);
  s.nodes = sizing::node_counts(r.nodes, "nodes");
  s.global_batch = global_batch(r);
  s.objective = sizing::objective(r.objective, "objective");
  if (r.deadline) s.deadline_days = sizing::duration_days(*r.deadline, "deadline");
  if (r.price) s.prices = sizing::prices(*r.price, "price", s.systems);
  return s;
}

// The plan request of one point of the sweep: the fastest layout, nothing explained.
PlanRequest point_request(const SizeRequest& r, const SizeSweep& s, const std::string& system, std::int64_t nodes) {
  PlanRequest p;
  p.model = r.model;
  p.overrides = r.overrides;
  p.training = r.training;
  p.training.global_batch = s.global_batch;
  p.cluster.system = system;
  p.cluster.nodes = nodes;
  p.hardware.catalog = r.catalog;
  p.perf = r.perf;
  p.ranking.memory_margin = r.memory_margin;
  p.ranking.top = 1;
  p.ranking.threads = 1;
  return p;
}

// Why nothing fits at a point: the closest layout's shortfall, in GPU memory or in the node's host memory or NVMe.
std::string no_fit_note(const gpuplan::PlanResult& found) {
  if (found.near_misses.empty()) return "no layout of the global batch on these GPUs";
  const Plan& closest = found.near_misses.front();
  const std::string layout = fmt::format("the closest layout ({})", layout_flags(closest));
  for (const auto& [check, where] : {std::pair{&closest.memory.host, "host memory"}, {&closest.memory.nvme, "NVMe"}})
    if (closest.memory_bytes <= closest.usable_bytes && check->checked && !check->fits)
      return fmt::format("does not fit: {} keeps {} in each node's {}, which holds {}", layout,
                         format_gb(static_cast<double>(check->needed_per_node_bytes)), where,
                         format_gb(static_cast<double>(check->capacity_per_node_bytes)));
  return fmt::format("does not fit: {} needs {} per GPU, {} usable", layout,
                     format_gb(static_cast<double>(closest.memory_bytes)),
                     format_gb(static_cast<double>(closest.usable_bytes)));
}

// One point: the search, and the step time of its winner.
detail::SizedPoint size_point(const SizeRequest& r, const SizeSweep& s, const std::string& system,
                              std::int64_t nodes) {
  const PlanRequest request = point_request(r, s, system, nodes);
  detail::PlanSetup setup = detail::plan_setup(request);
  detail::SizedPoint out;
  out.point.system = system;
  out.point.nodes = nodes;
  out.point.gpus = nodes * setup.inputs.fabric.gpus_per_node;
  const sizing::NetworkTier tier = sizing::network_tier(setup.cluster.system, nodes, r.spine_oversubscription);
  if (r.nic_GBps) setup.inputs.fabric.nic_per_gpu_GBps = *r.nic_GBps;
  setup.inputs.fabric.nic_per_gpu_GBps /= tier.oversubscription;
  out.point.network_tier = tier.name;
  out.point.nic_GBps = setup.inputs.fabric.nic_per_gpu_GBps;
  setup.inputs.explain = false;
  const SequentialRunner one_thread;
  const gpuplan::PlanResult found = search_plans(setup.inputs, {}, &one_thread);
  out.evaluated = found.evaluated;
  out.board_power_W = setup.cluster.gpu.board_power_W;
  out.host_overhead = sizing::host_power_overhead(setup.cluster.system, setup.cluster.gpu);
  if (found.plans.empty()) {
    out.point.note = no_fit_note(found);
    return out;
  }
  const PlanReport report = detail::plan_report(request, setup, found.plans.front());
  out.point.fits = true;
  out.point.step_s = report.time.step_s;
  out.point.tokens_per_s = report.throughput.tokens_per_s;
  out.point.mfu = report.throughput.mfu;
  out.point.mfu_causal = report.throughput.mfu_causal;
  for (const auto& [name, seconds] : report.time.breakdown)
    if (name == "pipeline_bubble") out.point.bubble_fraction = seconds / report.time.step_s;
  out.breakdown = report.time.breakdown;
  out.point.layout = report.layout;
  out.point.command = report.command;
  return out;
}

// Every point, `runner`'s workers taking the next one until none is left.
std::vector<detail::SizedPoint> size_points(const SizeRequest& r, const SizeSweep& s, ProgressCallback& progress,
                                            const ParallelRunner& runner) {
  std::vector<std::pair<std::string, std::int64_t>> todo;
  for (const std::string& system : s.systems)
    for (std::int64_t nodes : s.nodes) todo.emplace_back(system, nodes);
  // The largest clusters take longest to search: started first, they leave the small ones to fill the gaps.
  std::vector<std::size_t> order(todo.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return todo[a].second > todo[b].second; });
  std::vector<detail::SizedPoint> points(todo.size());
  std::vector<std::exception_ptr> errors(todo.size());
  std::atomic<std::size_t> next{0}, done{0};
  const int workers = std::max(1, std::min<int>(runner.workers(static_cast<int>(r.threads)),
                                                static_cast<int>(todo.size())));
  runner.run(workers, [&](int worker) {
    for (std::size_t taken = next++; taken < todo.size(); taken = next++) {
      const std::size_t i = order[taken];
      try {   // an error leaves its worker's thread only through here: the first is rethrown below
        points[i] = size_point(r, s, todo[i].first, todo[i].second);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      const std::size_t finished = ++done;
      if (worker == 0 && progress) progress(finished, todo.size());   // one thread reports
    }
  });
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  if (progress) progress(todo.size(), todo.size());
  return points;
}

}  // namespace

SizeResult run(const SizeRequest& r, ProgressCallback progress, const ParallelRunner* runner) {
  const auto start = std::chrono::steady_clock::now();
  const SizeSweep sweep = sweep_of(r);
  const SequentialRunner sequential;
  std::vector<detail::SizedPoint> points = size_points(r, sweep, progress, runner ? *runner : sequential);
  SizeResult out = detail::size_answers(r, sweep, points);
  out.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace gpuplan::api
