// What `gpuplan comm` prints: one line per size as nccl-tests prints them, with the algorithm NCCL would pick and
// why; and what `gpuplan comm --calibrate` prints: the fit per tier and the model against the measurements.
#include <fmt/format.h>

#include "gpuplan/api.hpp"

namespace gpuplan::api {

namespace detail {
std::string runs_fit_text(const CalibrateResult& result);   // calibrate_runs_text.cpp
}  // namespace detail

std::string to_text(const CommResult& r) {
  const std::int64_t placed = r.ranks_per_node, spanned = r.nodes_spanned;
  std::string out = fmt::format(
      "# {} over {} ranks on {}: {} rank{} per node, {} node{}{}\n", r.collective, r.ranks, r.fabric, placed,
      placed == 1 ? "" : "s", spanned, spanned == 1 ? "" : "s",
      r.concurrent_groups_per_node > 1
          ? fmt::format(", {} groups sharing each node's NICs", r.concurrent_groups_per_node)
          : "");
  // rccl-tests keeps nccl-tests' bus bandwidth definitions.
  out += fmt::format("# busbw = algbw x {:.4f} ({} factor for {} ranks); model, not a measurement\n",
                     r.busbw_factor, r.library == "RCCL" ? "rccl-tests" : "nccl-tests", r.ranks);
  out += fmt::format("#{:>14} {:>12} {:>12} {:>12}  {}\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
                     "algorithm");
  for (const auto& c : r.results) {
    std::string algorithm = c.algorithm;
    if (!c.protocol.empty()) algorithm.append("/").append(c.protocol);
    out += fmt::format(" {:>14.0f} {:>12.2f} {:>12.2f} {:>12.2f}  {}\n", c.size_bytes, c.time_s * 1e6, c.algbw_GBps,
                       c.busbw_GBps, algorithm);
  }
  if (r.results.size() == 1) out += fmt::format("why: {}\n", r.results.front().reason);
  else if (!r.results.empty()) out += fmt::format("# why (largest size): {}\n", r.results.back().reason);
  return out;
}

namespace {

std::string tier_text(const char* name, const std::optional<TierFitReport>& t) {
  if (!t) return "";
  std::string by_ranks;
  if (t->bus_GBps_by_ranks) {
    // The tier line's busbw is the largest group's.
    for (const RankBandwidth& b : *t->bus_GBps_by_ranks)
      by_ranks += fmt::format("{}{} ranks {:.2f}", by_ranks.empty() ? "  busbw by group size: " : ", ", b.ranks,
                              b.bus_GBps);
    by_ranks += " GB/s\n";
  }
  return fmt::format("{} tier: latency {:.2f} us + {:.3f} us per ring step, busbw {:.2f} GB/s  ({} rows from {} file{}; "
                     "fit error mean {:.1f}%, max {:.1f}%)\n",
                     name, t->latency_us, t->step_latency_us, t->bus_GBps, t->fit.rows, t->fit.files,
                     t->fit.files == 1 ? "" : "s", 100 * t->fit.mean_rel_error, 100 * t->fit.max_rel_error) +
         by_ranks;
}

std::string comparison_text(const CalibrateResult& r) {
  std::string out = fmt::format("\nmodel vs measured time on {} (relative error, mean / max over the rows):\n",
                                r.compared_on.value_or(""));
  out += fmt::format("  {:<40} {:>5} {:>18} {:>18}\n", "file", "ranks", "uncalibrated", "calibrated");
  for (const auto& c : *r.comparison)
    out += fmt::format("  {:<40} {:>5} {:>8.1f}% /{:>6.1f}% {:>8.1f}% /{:>6.1f}%\n",
                       c.file.substr(c.file.size() > 40 ? c.file.size() - 40 : 0), c.ranks,
                       100 * c.model_mean_rel_error, 100 * c.model_max_rel_error, 100 * c.calibrated_mean_rel_error,
                       100 * c.calibrated_max_rel_error);
  return out;
}

}  // namespace

std::string to_text(const CalibrateResult& r) {
  if (r.runs_fit) {
    std::string out = detail::runs_fit_text(r);
    if (r.written) return out + fmt::format("\nwrote {}: use it with --perf {}\n", *r.written, *r.written);
    return out + "\n" + calibration_file_text(r);
  }
  std::string out;
  for (const auto& f : r.files) {
    out += fmt::format("{}: {} on {} ranks{}, {} rows\n", f.file, f.collective, f.ranks,
                       f.hosts > 0 ? fmt::format(" ({} host{})", f.hosts, f.hosts == 1 ? "" : "s") : "", f.rows);
    for (const auto& w : f.warnings) out += fmt::format("  warning: {}\n", w);
  }
  out += tier_text("intra-node", r.calibration.comm.intra);
  out += tier_text("inter-node", r.calibration.comm.inter);
  if (r.comparison) out += comparison_text(r);
  if (r.written) out += fmt::format("\nwrote {}: use it with --comm-calibration {}\n", *r.written, *r.written);
  else out.append("\n").append(calibration_file_text(r));
  return out;
}

}  // namespace gpuplan::api
