// What gpuplan calibrate --runs prints: each constant before and after with its bounds, the runs, and the error
// before and after calibration, on the runs fitted and left out one at a time.
#include <fmt/format.h>

#include "gpuplan/api.hpp"

namespace gpuplan::api::detail {

std::string runs_fit_text(const CalibrateResult& r) {
  const RunsFit& f = *r.runs_fit;
  std::string out = fmt::format("step-time constants for {}, fitted to {} measured run{}:\n", f.gpu, f.runs.size(),
                                f.runs.size() == 1 ? "" : "s");
  for (const FittedConstant& c : f.constants)
    out += fmt::format("  {:<26} {:>10.4g} -> {:<10.4g} (bounds {:.4g} to {:.4g})\n", c.name, c.before, c.after,
                       c.lower, c.upper);
  out += fmt::format("\n  {:<44} {:>10} {:>18} {:>18}\n", "run", "measured", "uncalibrated", "calibrated");
  for (const MeasuredRunReport& m : f.runs)
    out += fmt::format("  {:<44} {:>8.1f}ms {:>10.1f}ms {:+5.1f}% {:>10.1f}ms {:+5.1f}%\n",
                       m.run.substr(m.run.size() > 44 ? m.run.size() - 44 : 0), 1e3 * m.measured_s, 1e3 * m.before_s,
                       100 * (m.before_s - m.measured_s) / m.measured_s, 1e3 * m.after_s,
                       100 * (m.after_s - m.measured_s) / m.measured_s);
  out += fmt::format("\nMAPE on the runs fitted: {:.1f}% uncalibrated, {:.1f}% calibrated\n", 100 * f.mape_before,
                     100 * f.mape_after);
  if (f.folds > 0)
    out += fmt::format("MAPE left out ({}): {:.1f}% uncalibrated, {:.1f}% calibrated\n",
                       f.folds == static_cast<std::int64_t>(f.runs.size()) ? "leave-one-out"
                                                                          : fmt::format("{} groups", f.folds),
                       100 * f.held_out_mape_before, 100 * f.held_out_mape_after);
  else
    out += "MAPE left out: needs 2 runs or more\n";
  return out;
}

}  // namespace gpuplan::api::detail
