// Fitting the compute model's constants to measured step times (gpuplan/perf_fit.hpp).
#include "gpuplan/perf_fit.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/json_text.hpp"

namespace gpuplan {

namespace {

// Bounds (docs/estimate.md, "Calibrate from your runs"): GEMMs reach 0.5-1.3x the efficiency the model assumes
// (capped at the peak where it is applied); collectives reach 30-100 % of the modelled speed (never faster than
// the wire the model prices); the host adds up to 5 ms per microbatch and stage. The host bound also keeps one run
// from explaining all of its error as host time: with a 50 ms bound, vTrain's last run calibrated alone predicted
// the other 1,439 runs worse than the uncalibrated model (30.0 % against 28.1 %; 23.3 % at 5 ms).
constexpr FitParameter kRunParameters[] = {
    {"compute_efficiency_scale", &PerfConstants::compute_efficiency_scale, 0.5, 1.3},
    {"comm_intra_efficiency", &PerfConstants::comm_intra_efficiency, 0.3, 1.0},
    {"comm_inter_efficiency", &PerfConstants::comm_inter_efficiency, 0.3, 1.0},
    {"microbatch_host_s", &PerfConstants::microbatch_host_s, 0.0, 5e-3},
};

double prior(const PerfConstants& c, const PerfConstants& start, std::span<const FitParameter> params) {
  double sum = 0;
  for (const FitParameter& p : params) {
    const double d = (c.*(p.member) - start.*(p.member)) / (p.upper - p.lower);
    sum += d * d;
  }
  return sum;
}

}  // namespace

std::span<const FitParameter> run_calibration_parameters() { return kRunParameters; }

std::vector<double> predicted_steps_s(const std::vector<MeasuredRun>& runs, const PerfConstants& perf) {
  std::vector<double> out;
  out.reserve(runs.size());
  for (const MeasuredRun& r : runs) {
    EstimateInputs in = r.inputs;
    in.perf = perf;
    out.push_back(estimate_step_time(in).step_s);
  }
  return out;
}

double mean_abs_percentage_error(const std::vector<MeasuredRun>& runs, const std::vector<double>& predicted_s) {
  if (runs.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) sum += std::abs(predicted_s[i] - runs[i].step_s) / runs[i].step_s;
  return sum / static_cast<double>(runs.size());
}

double mean_abs_percentage_error(const std::vector<MeasuredRun>& runs, const PerfConstants& perf) {
  return mean_abs_percentage_error(runs, predicted_steps_s(runs, perf));
}

PerfConstants fit_perf_constants(const std::vector<MeasuredRun>& runs, const PerfConstants& start,
                                 std::span<const FitParameter> params, double prior_weight) {
  auto loss = [&](const PerfConstants& c) {
    return mean_abs_percentage_error(runs, c) + prior_weight * prior(c, start, params);
  };
  PerfConstants c = start;
  double best = loss(c);
  for (const FitParameter& p : params) {
    if (!(p.scan_step > 0)) continue;
    for (double x = p.scan_from; x <= p.scan_to + 1e-12; x += p.scan_step) {
      PerfConstants t = c;
      t.*(p.member) = x;
      const double l = loss(t);
      if (l < best) {
        best = l;
        c = t;
      }
    }
  }
  for (double step = 0.3; step > 0.005; step *= 0.5) {
    for (bool improved = true; improved;) {
      improved = false;
      for (const FitParameter& p : params) {
        for (const double dir : {1.0, -1.0}) {
          PerfConstants t = c;
          double& x = t.*(p.member);
          // A constant at zero has no scale to step by: it starts from 1 % of its upper bound.
          x = x <= 0 ? (dir > 0 ? p.upper * 0.01 : 0) : x * (1 + dir * step);
          x = std::clamp(x, p.lower, p.upper);
          const double l = loss(t);
          if (l < best - 1e-6) {
            best = l;
            c = t;
            improved = true;
          }
        }
      }
    }
  }
  return c;
}

HeldOutError leave_one_out(const std::vector<MeasuredRun>& runs, const PerfConstants& start,
                           std::span<const FitParameter> params, double prior_weight, int max_folds) {
  HeldOutError out;
  const std::size_t n = runs.size();
  if (n < 2) return out;
  const std::size_t folds = std::min(n, static_cast<std::size_t>(std::max(2, max_folds)));
  out.folds = static_cast<int>(folds);
  for (std::size_t f = 0; f < folds; ++f) {
    const std::size_t begin = f * n / folds, end = (f + 1) * n / folds;
    std::vector<MeasuredRun> train, held;
    for (std::size_t i = 0; i < n; ++i) (i >= begin && i < end ? held : train).push_back(runs[i]);
    const PerfConstants fitted = fit_perf_constants(train, start, params, prior_weight);
    const double weight = static_cast<double>(held.size()) / static_cast<double>(n);
    out.mape_before += weight * mean_abs_percentage_error(held, start);
    out.mape_after += weight * mean_abs_percentage_error(held, fitted);
  }
  return out;
}

std::string perf_overlay_json(std::string_view gpu, const std::vector<std::pair<std::string, double>>& values,
                              std::string_view source, std::string_view about) {
  nlohmann::json j;
  j["_about"] = about;
  for (const auto& [key, value] : values) j["gpus"][std::string(gpu)][key] = {{"value", value}, {"source", source}};
  return gpuplan::detail::json_text(j, 2) + "\n";
}

}  // namespace gpuplan
