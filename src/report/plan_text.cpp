// What `gpuplan plan` prints: the search, the ranked plans with their memory and time, why #1 wins, and how its
// step time changes with each choice.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "report/launch_text.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api {

namespace {

std::string gb(double bytes) { return format_gb(bytes); }
std::string gb(std::int64_t bytes) { return gb(static_cast<double>(bytes)); }

std::string layout_line(const PlanLayout& l) {
  std::string s = fmt::format("TP={} PP={}", l.tp, l.pp);
  if (l.first_stage_layers >= 0 || l.last_stage_layers >= 0)
    s += fmt::format(" (first stage {}, last {})", format_quantity(l.first_stage_layers, "layer", "layers"),
                     l.last_stage_layers);
  if (l.vpp > 1) s += fmt::format(" VPP={}", l.vpp);
  if (l.cp > 1) s += fmt::format(" CP={}", l.cp);
  if (l.cp > 1 && l.cp_comm_type == "a2a+p2p") s += fmt::format("(a2a {} x p2p {})", l.cp_a2a_size, l.cp / l.cp_a2a_size);
  else if (l.cp > 1 && l.cp_comm_type != "p2p") s += fmt::format("({})", l.cp_comm_type);
  if (l.ep > 1) s += fmt::format(" EP={} ETP={}", l.ep, l.etp);
  s += fmt::format(" DP={} micro-batch={} ({}) ZeRO-{}", l.dp, l.micro_batch,
                   format_quantity(l.microbatches, "microbatch", "microbatches"), l.zero);
  if (l.sequence_parallel) s += " SP";
  if (l.tp_overlap) s += " TP-overlap";
  if (l.recompute != "none")
    s += fmt::format(" recompute={}{}", l.recompute,
                     l.recompute_layers >= 0
                         ? fmt::format("({}/stage)", format_quantity(l.recompute_layers, "layer", "layers"))
                         : "");
  if (l.offload != "none") s += fmt::format(" offload={} to {}", l.offload, l.offload_target);
  if (l.gpus != 0) s += " on " + format_quantity(l.gpus, "GPU", "GPUs");
  return s;
}

// What an equivalent layout changes: "ZeRO-2", "offload to nvme".
std::string difference(const PlanLayout& from, const PlanLayout& to) {
  std::string out;
  if (to.zero != from.zero) out += fmt::format("ZeRO-{}", to.zero);
  if (to.offload != from.offload) out += fmt::format("{}offload={}", out.empty() ? "" : " ", to.offload);
  if (to.offload_target != from.offload_target)
    out += fmt::format("{}offload to {}", out.empty() ? "" : " ", to.offload_target);
  return out;
}

// Warnings every plan carries (the MoE host synchronization, say): said once above the list, not under each plan.
std::vector<std::string> shared_warnings(const std::vector<PlanReport>& plans) {
  std::vector<std::string> shared;
  if (plans.empty()) return shared;
  for (const std::string& w : plans.front().throughput.warnings) {
    auto carries = [&w](const PlanReport& p) {
      return std::find(p.throughput.warnings.begin(), p.throughput.warnings.end(), w) != p.throughput.warnings.end();
    };
    if (std::all_of(plans.begin(), plans.end(), carries)) shared.push_back(w);
  }
  return shared;
}

std::string plan_text(const PlanReport& p, int rank, const std::vector<std::string>& shared) {
  std::string out = fmt::format("#{} {}\n", rank, layout_line(p.layout));
  if (!p.equivalents.empty()) {
    std::string others;
    for (const PlanLayout& e : p.equivalents) others += (others.empty() ? "" : "; ") + difference(p.layout, e);
    out += fmt::format("   the same time and memory with: {}\n", others);
  }
  out += fmt::format("   step {:.3f} s, {:.0f} tokens/s ({:.0f} per GPU), MFU {:.1f}%", p.time.step_s,
                     p.throughput.tokens_per_s, p.throughput.tokens_per_s_per_gpu, 100 * p.throughput.mfu);
  if (p.cost_per_million_tokens) out += fmt::format(", ${:.3f} per million tokens", *p.cost_per_million_tokens);
  const StageReport& w = p.memory.per_gpu;
  out += fmt::format("\n   memory {} of {} usable (worst stage {}, peak in {})\n", gb(w.total), gb(p.usable_bytes),
                     p.memory.stage, w.peak_phase);
  out += fmt::format("     weights {}  master {}  grads {}  optimizer {}  activations {}  logits {}  buffers {}  "
                     "runtime {}\n",
                     gb(w.weights), gb(w.master_weights), gb(w.gradients), gb(w.optimizer_states),
                     gb(w.activations.value_or(0)), gb(w.logits.value_or(0)), gb(w.comm_buffers), gb(w.runtime));
  std::string terms;
  for (const auto& [name, t] : p.time.breakdown)
    if (t > 0) terms += fmt::format("  {} {:.3f}", name, t);
  out += fmt::format("   time (s):{}\n", terms);
  for (const auto& warning : p.throughput.warnings)
    if (std::find(shared.begin(), shared.end(), warning) == shared.end())
      out += fmt::format("   warning: {}\n", warning);
  out += fmt::format("   reproduce: {}\n\n", p.command);
  return out;
}

// What a near miss is short of: GPU memory, or with offload the host's memory or drives.
std::string shortfalls(const PlanReport& p) {
  std::string out;
  if (p.lacks_bytes.value_or(0) > 0)
    out += fmt::format("    needs {} per GPU, {} usable: lacks {}\n", gb(p.memory.per_gpu.total), gb(p.usable_bytes),
                       gb(*p.lacks_bytes));
  const std::pair<const char*, const NodeStorageReport*> stores[] = {{"host memory", &p.memory.host},
                                                                     {"NVMe", &p.memory.nvme}};
  for (const auto& [what, s] : stores)
    if (!s->fits.value_or(true) && s->needed_per_node && s->capacity_per_node)
      out += fmt::format("    needs {} of {} per host ({} per GPU), {} there: lacks {}\n", gb(*s->needed_per_node),
                         what, gb(s->per_gpu.value_or(0)), gb(*s->capacity_per_node),
                         gb(*s->needed_per_node - *s->capacity_per_node));
  return out;
}

// Whether any near miss is short of host memory: offloading more cannot help it, a node's drives or more nodes can.
bool host_memory_short(const PlanResult& r) {
  for (const PlanReport& p : r.near_misses)
    if (!p.memory.host.fits.value_or(true)) return true;
  return false;
}

std::string nothing_fits(const PlanResult& r) {
  std::string out = "Nothing fits. The layouts closest to fitting:\n";
  for (const PlanReport& p : r.near_misses)
    out += fmt::format("  {}\n{}    {}\n", layout_line(p.layout), shortfalls(p), p.command);
  if (host_memory_short(r))
    return out + "Options: more nodes (each brings its host memory), offload to NVMe where the framework can "
                 "(DeepSpeed's ZeRO-Infinity, --offload-target nvme), --loss chunked or an 8-bit optimizer.\n";
  return out + (r.job.offload_searched
                    ? "Options: more GPUs (--nodes), --loss chunked or an 8-bit optimizer.\n"
                    : "Options: more GPUs (--nodes), --loss chunked, an 8-bit optimizer, or allow offload (drop "
                      "--no-offload).\n");
}

std::string explanation(const PlanResult& r) {
  std::string out;
  if (!r.why_winner.empty()) {
    out += "Why #1 wins:\n";
    for (const auto& line : r.why_winner) out += fmt::format("  - {}\n", line);
  }
  if (!r.sensitivity.empty()) {
    out += "Sensitivity of #1 (best layout with one choice changed):\n";
    for (const SensitivityReport& s : r.sensitivity) {
      if (s.fits) out += fmt::format("  {:<32} {:+.1f}% step time   {}\n", s.change, 100 * s.delta, s.note);
      else out += fmt::format("  {:<32} {}\n", s.change, s.note);
    }
  }
  return out;
}

// The launch file's own layout against the best plan.
std::string baseline_text(const PlanResult& r) {
  if (!r.baseline) return {};
  const PlanBaseline& b = *r.baseline;
  const std::string file = r.launch_config ? r.launch_config->file : std::string("the --from file");
  if (!b.step_s) return fmt::format("\nThe layout of {} cannot run on this cluster: {}\n", file, b.note);
  std::string out = fmt::format("\nThe layout of {}: step {:.3f} s, {} on the fullest GPU, {}", file, *b.step_s,
                                gb(static_cast<double>(b.memory_bytes.value_or(0))), b.fits ? "fits" : "does NOT fit");
  if (b.speedup) out += fmt::format("; plan #1 is {:.2f}x as fast", *b.speedup);
  return out + ".\n";
}

}  // namespace

std::string to_text(const PlanResult& r) {
  const PlanJob& job = r.job;
  std::string out = fmt::format("Plan for {} on {} ({}), seq {} x global batch {}, objective {}\n", job.model,
                                job.cluster, format_quantity(job.gpus, "GPU", "GPUs"), job.seq_len, job.global_batch,
                                job.objective);
  out += fmt::format("Searched {} layouts: {} evaluated, {} fit, {} pruned by memory bounds, {} by the time bound, in "
                     "{:.3f} s\n",
                     r.space, r.evaluated, r.feasible, r.pruned_by_memory, r.pruned_by_time, r.search_seconds);
  out += fmt::format("Usable memory per GPU: {} ({} minus the {:.0f}% margin)\n\n",
                     gb(static_cast<double>(job.capacity_bytes) * (1 - r.memory_margin)), gb(job.capacity_bytes),
                     100 * r.memory_margin);
  for (const auto& w : job.warnings) out += fmt::format("Warning: {}\n\n", w);
  if (!r.plans.empty()) out += detail::framework_text(r.plans.front().memory.framework);
  const std::string launch = detail::launch_read_text(r.launch_config) + detail::launch_files_text(r.launch_files, r.launch_written);
  if (r.plans.empty()) return out + nothing_fits(r) + launch;
  const std::vector<std::string> shared = shared_warnings(r.plans);
  for (const auto& w : shared)
    out += fmt::format("Warning ({}): {}\n\n", r.plans.size() > 1 ? "every plan below" : "the plan below", w);
  int rank = 0;
  for (const PlanReport& p : r.plans) out += plan_text(p, ++rank, shared);
  return out + explanation(r) + baseline_text(r) + launch;
}

}  // namespace gpuplan::api
