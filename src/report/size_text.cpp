// What `gpuplan size` prints: one row per system and node count, the headline answers, the assumptions, and with
// --explain why the curves bend.
#include <fmt/format.h>

#include "gpuplan/api.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api {

namespace {

std::string compact_layout(const PlanLayout& l) {
  std::string s = fmt::format("TP{} PP{}", l.tp, l.pp);
  if (l.vpp > 1) s += fmt::format(" VPP{}", l.vpp);
  if (l.cp > 1) s += fmt::format(" CP{}", l.cp);
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  s += fmt::format(" DP{} mb{} ZeRO-{}", l.dp, l.micro_batch, l.zero);
  if (l.recompute != "none") s += " rc-" + l.recompute;
  if (l.offload != "none") s += " offload";
  return s;
}

std::string header(bool priced, bool power) {
  std::string h = fmt::format("  {:<12} {:>6} {:>6}  {:>7} {:>11} {:>5} {:>8} {:>10}", "system", "nodes", "GPUs",
                              "step s", "tokens/s", "MFU", "days", "GPU-hours");
  if (priced) h += fmt::format(" {:>9}", "cost $");
  if (power) h += fmt::format(" {:>8}", "MWh");
  return h + "  layout\n";
}

std::string row(const SizePoint& p, bool priced, bool power) {
  const char mark = p.pareto ? '*' : ' ';
  std::string line = fmt::format("{} {:<12} {:>6} {:>6}  ", mark, p.system, p.nodes, p.gpus);
  if (!p.fits) return line + p.note + "\n";
  line += fmt::format("{:>7.2f} {:>11} {:>4.0f}% {:>8.1f} {:>10}", p.step_s, format_count(p.tokens_per_s),
                      100 * p.mfu, p.days, format_count(p.gpu_hours));
  if (priced) line += fmt::format(" {:>9}", p.cost_dollars ? format_count(*p.cost_dollars) : "-");
  if (power) line += fmt::format(" {:>8.0f}", p.energy_MWh);
  if (!p.meets_deadline) line += "  (late)";
  return line + "  " + compact_layout(*p.layout) + "\n";
}

}  // namespace

std::string to_text(const SizeResult& r, bool power, bool explain) {
  const SizeJob& j = r.job;
  std::string out = fmt::format("{}: {} tokens at sequence {}, global batch {} ({} tokens)\n", j.model,
                                format_count(j.tokens), j.seq_len, format_quantity(j.global_batch, "sequence", "sequences"),
                                format_count(static_cast<double>(j.global_batch_tokens)));
  bool priced = false;
  for (const SizePoint& p : r.points) priced = priced || p.cost_dollars.has_value();
  out += fmt::format("\n{}", header(priced, power));
  std::string system;
  for (const SizePoint& p : r.points) {
    if (!system.empty() && p.system != system) out += "\n";
    system = p.system;
    out += row(p, priced, power);
  }
  out += fmt::format("\n* on the time-versus-{} front\n\n", priced ? "cost" : "GPU-hours");
  for (const SizeHeadline& h : r.headlines) out += fmt::format("{}: {}\n", h.question, h.answer);
  out += "\nAssumptions:\n";
  for (const std::string& a : j.assumptions) out += "  - " + a + "\n";
  for (const std::string& n : r.notes) out += "  - " + n + "\n";
  for (const std::string& w : r.warnings) out += "Warning: " + w + "\n";
  if (explain) {
    out += "\nWhy the curves bend:\n";
    for (const std::string& e : r.explanation) out += "  - " + e + "\n";
  }
  out += fmt::format("\n{}, {} layouts evaluated in {:.2f} s\n",
                     format_quantity(static_cast<std::int64_t>(r.points.size()), "search", "searches"),
                     format_count(static_cast<double>(r.layouts_evaluated)), r.search_seconds);
  if (r.chart_written) out += fmt::format("Chart written to {}\n", *r.chart_written);
  return out;
}

}  // namespace gpuplan::api
