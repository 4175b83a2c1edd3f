// The torchtitan set of the step-time report: torchtitan's own published FSDP2 throughput on A100 and H200
// (validation/data/torchtitan-published.csv, which states the sources and the settings taken).
#include <fmt/core.h>

#include "gpuplan/api.hpp"
#include "time_sets.hpp"

namespace validation {

namespace {

namespace api = gpuplan::api;

// One row as `gpuplan estimate --framework torchtitan` takes it: columns model, system, nodes, seq_len,
// local_batch, recompute, recompute_layers (empty: all), compile, precision, tokens_per_s_per_gpu.
api::EstimateRequest torchtitan_request(const std::vector<std::string>& c) {
  api::EstimateRequest r;
  r.model.name_or_path = c[0];
  r.cluster.system = c[1];
  r.cluster.nodes = std::stoll(c[2]);
  r.training.framework = "torchtitan";
  r.training.seq_len = std::stoll(c[3]);
  r.training.micro_batch = std::stoll(c[4]);
  r.training.global_batch = std::stoll(c[4]) * 8 * std::stoll(c[2]);
  r.layout.recompute = c[5];
  if (!c[6].empty()) r.layout.recompute_layers = std::stoll(c[6]);
  r.training.compile = c[7] == "1";
  r.training.precision = c[8];
  return r;
}

}  // namespace

ValidationSet torchtitan_runs(const std::string& repo) {
  ValidationSet set{"torchtitan published FSDP2 runs (A100 2024, H200 2025)", "s",
                    "validation/data/torchtitan-published.csv (pytorch/torchtitan docs and benchmarks)", {}, {}};
  for (const std::vector<std::string>& c : csv_records(repo + "/validation/data/torchtitan-published.csv")) {
    const api::EstimateRequest r = torchtitan_request(c);
    const double measured_s = std::stod(c[3]) * std::stod(c[4]) / std::stod(c[9]);
    const std::string layers = c[6].empty() ? "" : " (" + c[6] + " layers)";
    const std::string gpus = std::to_string(8 * std::stoll(c[2]));
    const std::string label = fmt::format("{} on {} {}, batch {}, recompute {}{}{}{}", c[0], gpus, c[1], c[4], c[5],
                                          layers, c[7] == "1" ? ", compiled" : "", c[8] == "fp8" ? ", float8" : "");
    set.rows.push_back({label, c[0] + " " + gpus + " batch " + c[4], measured_s, api::run(r).time.step_s});
  }
  return set;
}

}  // namespace validation
