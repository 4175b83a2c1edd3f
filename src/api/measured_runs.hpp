// The measured training runs of calibrate --runs, read from CSV tables and Megatron-LM logs (docs/estimate.md,
// "Calibrate from your runs"). Each becomes the estimate request of its job and its measured step time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/api.hpp"

namespace gpuplan::api::detail {

struct RunRecord {
  std::string label;          // "runs.csv:4", or the log's path
  EstimateRequest request;
  double step_s = 0;
};

// The runs of one file: a Megatron-LM log when it holds Megatron's arguments block, else a CSV table. Values a
// row does not give come from `defaults` (precision, recompute, attention, cluster.system, gpu, perf). Errors
// name the file, line and column, the value, and what is accepted.
std::vector<RunRecord> read_runs(const FileInput& file, const CalibrateRequest& defaults);

// A dropout probability as a table cell or log argument writes it: a number from 0 to 1, else none.
std::optional<double> probability_of(std::string_view text);

}  // namespace gpuplan::api::detail
