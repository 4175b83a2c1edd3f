// The FP8 set of the step-time report: NeMo 24.07's published pre-training throughput on DGX H100
// (validation/data/nemo-2407-h100-fp8.csv, which states the source and the settings taken).
#include <fmt/core.h>

#include "gpuplan/api.hpp"
#include "time_sets.hpp"

namespace validation {

namespace {

namespace api = gpuplan::api;

// One row as `gpuplan estimate` takes it: columns model, layers, hidden, heads, ffn_hidden (empty: the model's),
// gpus, global_batch, micro_batch, seq_len, tp, pp, cp, vpp, tokens_per_s_per_gpu.
api::EstimateRequest request_of(const std::vector<std::string>& c) {
  api::EstimateRequest r;
  r.model.name_or_path = c[0];
  if (!c[1].empty()) {
    r.overrides.layers = std::stoll(c[1]);
    r.overrides.hidden = std::stoll(c[2]);
    r.overrides.heads = std::stoll(c[3]);
    r.overrides.ffn_hidden = std::stoll(c[4]);
  }
  const std::int64_t gpus = std::stoll(c[5]), tp = std::stoll(c[9]), vpp = std::stoll(c[12]);
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = (gpus + 7) / 8;
  r.layout.gpus = gpus;
  r.training.global_batch = std::stoll(c[6]);
  r.training.micro_batch = std::stoll(c[7]);
  r.training.seq_len = std::stoll(c[8]);
  r.layout.tp = tp;
  r.layout.pp = std::stoll(c[10]);
  r.layout.cp = std::stoll(c[11]);
  r.layout.vpp = vpp;
  if (vpp > 1) r.layout.pp_schedule = "interleaved";
  r.layout.sequence_parallel = tp > 1;
  r.timing.tp_overlap = tp > 1;
  r.layout.zero = 1;
  r.training.precision = "fp8";
  r.training.grad_dtype = "bf16";
  const bool gpt3 = c[0] == "gpt3-175b";
  r.training.loss = gpt3 ? "unfused" : "fused-native";
  if (gpt3) r.training.dropout = 0.1;
  return r;
}

}  // namespace

ValidationSet nemo_h100_fp8_runs(const std::string& repo) {
  ValidationSet set{"NeMo 24.07 performance summary, H100 FP8", "s",
                    "validation/data/nemo-2407-h100-fp8.csv (NVIDIA/NeMo performance_summary.md)", {}, {}};
  for (const std::vector<std::string>& c : csv_records(repo + "/validation/data/nemo-2407-h100-fp8.csv")) {
    const api::EstimateRequest r = request_of(c);
    const double gpus = std::stod(c[5]);
    const double measured_s = std::stod(c[8]) * std::stod(c[6]) / (std::stod(c[13]) * gpus);
    const std::string label = fmt::format("{}{} on {} GPUs", c[0], c[1].empty() ? "" : " (" + c[1] + " layers)", c[5]);
    set.rows.push_back({label, label, measured_s, api::run(r).time.step_s});
  }
  return set;
}

}  // namespace validation
