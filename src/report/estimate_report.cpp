// The JSON of a step estimate, shared by `gpuplan estimate --json` and each plan of `gpuplan plan --json`.
#include "gpuplan/report.hpp"

namespace gpuplan {

namespace {

constexpr const char* kFlopConvention =
    "model FLOPs = flops_per_token(model, seq_len).training x tokens (Megatron-LM / Narayanan et al. convention: "
    "matmuls only, backward = 2 x forward, causal attention not halved); HFU adds the recomputed forward";

}  // namespace

nlohmann::json estimate_json(const EstimateInputs& in, const StepEstimate& e, bool all_stages) {
  nlohmann::json j;
  j["time"]["step_s"] = e.step_s;
  j["time"]["breakdown"] = nlohmann::json::object();
  for (const auto& [name, t] : e.breakdown) j["time"]["breakdown"][std::string(name)] = t;
  j["throughput"] = {{"tokens_per_s", e.tokens_per_s},
                     {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
                     {"model_tflops_per_gpu", e.model_tflops_per_gpu},
                     {"hardware_tflops_per_gpu", e.hardware_tflops_per_gpu},
                     {"mfu", e.mfu},
                     {"hfu", e.hfu},
                     {"peak_tflops_per_gpu", e.peak_tflops},
                     {"flop_convention", kFlopConvention}};
  const MemoryReport report = estimate_memory(in.memory, true);
  const std::vector<Suggestion> fixes = report.fits ? std::vector<Suggestion>{} : suggest_fixes(in.memory);
  j["memory"] = memory_json(in.memory, report, fixes, all_stages);
  return j;
}

}  // namespace gpuplan
