#pragma once
// The compute model's constants fitted to measured step times: what `gpuplan calibrate --runs` and the step-time
// validation (validation/time_validate.cpp --fit) run. Pure: the runs come in as inputs, the overlay goes out as
// text; reading and writing files is the host's.
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuplan/estimate.hpp"

namespace gpuplan {

// One measured training step: the job as estimate_step takes it (its `perf` is replaced by the constants tried)
// and the step time measured for it.
struct MeasuredRun {
  std::string label;        // where it came from ("runs.csv:4", "train.log")
  EstimateInputs inputs;
  double step_s = 0;
};

// A constant the fit may move, inside [lower, upper]: bounds a measured GPU and network can reach, so that the fit
// cannot make one mechanism stand in for another (a slow network priced as slow GEMMs).
struct FitParameter {
  std::string_view key;     // its key in data/perf.json and --perf files
  double PerfConstants::*member;
  double lower, upper;
  // scan_step > 0: the values scan_from, scan_from + scan_step, ... scan_to are tried before the descent (for a
  // constant whose right value can lie anywhere in a wide range).
  double scan_from = 0, scan_to = 0, scan_step = 0;
};

// The named set `gpuplan calibrate --runs` fits: compute_efficiency_scale, comm_intra_efficiency,
// comm_inter_efficiency and microbatch_host_s, with their physical bounds (docs/estimate.md).
std::span<const FitParameter> run_calibration_parameters();

// Predicted step times of the runs under `perf`, and their mean absolute percentage error against the measured.
std::vector<double> predicted_steps_s(const std::vector<MeasuredRun>& runs, const PerfConstants& perf);
double mean_abs_percentage_error(const std::vector<MeasuredRun>& runs, const PerfConstants& perf);
// The same for step times already predicted (predicted_steps_s), one per run.
double mean_abs_percentage_error(const std::vector<MeasuredRun>& runs, const std::vector<double>& predicted_s);

// `start` with `params` moved to minimize the runs' MAPE plus prior_weight x the sum of each parameter's squared
// distance from its start, relative to its bounds' width. The prior decides between fits that explain the runs
// equally (one run cannot tell four constants apart): the one that moves the constants least. The scans first,
// then coordinate descent in multiplicative steps from 30 % down to 0.5 %.
PerfConstants fit_perf_constants(const std::vector<MeasuredRun>& runs, const PerfConstants& start,
                                 std::span<const FitParameter> params, double prior_weight = 0);

// Each run predicted by constants fitted to the others, its error averaged over the runs; before: the start's
// error on the same runs. With more runs than max_folds the runs are held out in max_folds contiguous groups.
struct HeldOutError {
  int folds = 0;
  double mape_before = 0, mape_after = 0;
};
HeldOutError leave_one_out(const std::vector<MeasuredRun>& runs, const PerfConstants& start,
                           std::span<const FitParameter> params, double prior_weight = 0, int max_folds = 50);

// An overlay --perf reads (data/perf.json's schema): each (key, value) under gpus.<gpu> with `source`; `about`
// goes to "_about".
std::string perf_overlay_json(std::string_view gpu, const std::vector<std::pair<std::string, double>>& values,
                              std::string_view source, std::string_view about);

}  // namespace gpuplan
