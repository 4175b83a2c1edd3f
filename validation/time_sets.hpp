// The validation sets of the step-time report beyond the A100 ones time_validate.cpp reads itself: the real
// Megatron-LM runs on 8x B200 and the published nccl-tests bus bandwidths, each row a measurement beside gpuplan's
// prediction, with the group whose ranking the report checks.
#pragma once

#include <string>
#include <vector>

namespace validation {

struct SetRow {
  std::string label;      // what was run
  std::string group;      // rows of one model and GPU count: the layouts the ranking compares
  double measured = 0;
  double predicted = 0;
};

struct ValidationSet {
  std::string name;       // the summary's first column
  std::string unit;       // "ms", "s", "TFLOP/s", "GB/s"
  std::string source;     // where the measurements come from
  std::vector<SetRow> rows;
  std::vector<std::string> not_checked;   // rows no catalog system describes, and why
};

struct SetStats {
  double mape = 0, max_error = 0, bias = 0, spearman = 0;
  int groups = 0;         // groups of 3 or more rows (Spearman is their mean)
};
SetStats set_stats(const std::vector<SetRow>& rows);
double spearman(const std::vector<double>& a, const std::vector<double>& b);

ValidationSet b200_megatron_runs(const std::string& repo);      // validation/data/b200-megatron-llama3-70b.json
ValidationSet b200_further_runs(const std::string& repo);       // validation/data/b200-simumax-further-runs.json
ValidationSet published_busbw(const std::string& repo);         // tests/data/nccl-tests/published-busbw.csv
ValidationSet nemo_h100_fp8_runs(const std::string& repo);      // validation/data/nemo-2407-h100-fp8.csv
ValidationSet torchtitan_runs(const std::string& repo);         // validation/data/torchtitan-published.csv

// The cells of each data line of a CSV: comment lines ('#') and the header (the first other line) skipped; a
// quoted cell may hold commas, and a line ending in a comma ends in an empty cell.
std::vector<std::vector<std::string>> csv_records(const std::string& path);

// One section of the report: the set's rows with their errors.
std::string set_table(const ValidationSet& set);

}  // namespace validation
