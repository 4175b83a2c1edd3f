// gpuplan calibrate --runs: the compute model's named constants fitted to measured step times, with the
// leave-one-out error that says whether the fit predicts runs it has not seen.
#include <fmt/format.h>

#include "api/measured_runs.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/perf_fit.hpp"

namespace gpuplan::api::detail {

namespace {

// Weight of the pull towards the published constants (gpuplan/perf_fit.hpp): small beside any error the runs
// show, it only decides between constants that explain the runs equally well.
constexpr double kPriorWeight = 0.02;
// More runs than this are held out in this many groups (each fit takes a second or so on a few hundred runs).
constexpr int kMostFolds = 20;

std::vector<MeasuredRun> measured_runs(const CalibrateRequest& r) {
  std::vector<MeasuredRun> runs;
  for (const FileInput& file : r.runs) {
    for (RunRecord& rec : read_runs(file, r)) {
      MeasuredRun run;
      run.label = rec.label;
      run.step_s = rec.step_s;
      try {
        run.inputs = estimate_job_inputs(rec.request);
        run.inputs.perf = perf_constants(run.inputs.gpu);  // checks the layout before the fit prices it
        estimate_step_time(run.inputs);
      } catch (const InputError& e) {
        throw InputError(rec.label + ": " + e.field(), e.given(), e.accepted());
      }
      if (!runs.empty() && run.inputs.gpu.name != runs.front().inputs.gpu.name)
        throw InputError(rec.label + ": gpu", run.inputs.gpu.name,
                         fmt::format("runs on one GPU ({}, as {}): the constants are fitted per GPU",
                                     runs.front().inputs.gpu.name, runs.front().label));
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

}  // namespace

CalibrateResult calibrate_runs(const CalibrateRequest& r) {
  if (!r.logs.empty())
    throw InputError("runs", "given with nccl-tests logs", "--runs FILE... or --calibrate FILE..., one at a time");
  std::vector<MeasuredRun> runs = measured_runs(r);
  std::vector<std::pair<std::string, std::string>> overlays;
  for (const FileInput& f : r.perf) overlays.emplace_back(f.path, file_text(f, "perf"));
  const PerfConstants start = perf_constants(runs.front().inputs.gpu, overlays);
  const auto params = run_calibration_parameters();
  const PerfConstants fitted = fit_perf_constants(runs, start, params, kPriorWeight);
  RunsFit fit;
  fit.gpu = runs.front().inputs.gpu.name;
  for (const FitParameter& p : params)
    fit.constants.push_back({std::string(p.key), start.*(p.member), fitted.*(p.member), p.lower, p.upper});
  const std::vector<double> before = predicted_steps_s(runs, start), after = predicted_steps_s(runs, fitted);
  for (std::size_t i = 0; i < runs.size(); ++i) fit.runs.push_back({runs[i].label, runs[i].step_s, before[i], after[i]});
  fit.mape_before = mean_abs_percentage_error(runs, before);
  fit.mape_after = mean_abs_percentage_error(runs, after);
  const HeldOutError held = leave_one_out(runs, start, params, kPriorWeight, kMostFolds);
  fit.folds = held.folds;
  fit.held_out_mape_before = held.mape_before;
  fit.held_out_mape_after = held.mape_after;
  CalibrateResult out;
  out.runs_fit = std::move(fit);
  return out;
}

}  // namespace gpuplan::api::detail
