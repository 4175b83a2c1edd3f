#pragma once
// Renders memory estimates as a text table or as the JSON object `gpuplan memory --json` prints.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpuplan/estimate.hpp"
#include "gpuplan/memory.hpp"

namespace gpuplan {

// The JSON contract: per_gpu.{weights,...,total}, host.total, nvme.total, capacity, fits, stage, stages,
// suggestions.
nlohmann::json memory_json(const MemoryInputs& in, const MemoryReport& report, const std::vector<Suggestion>& fixes,
                           bool all_stages);

std::string memory_text(const MemoryInputs& in, const MemoryReport& report, const std::vector<Suggestion>& fixes,
                        bool all_stages, bool explain);

// What `gpuplan estimate --json` prints for a step estimate: "time" {step_s, breakdown}, "throughput"
// {tokens_per_s, tokens_per_s_per_gpu, model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, hfu,
// peak_tflops_per_gpu, flop_convention} and "memory" (memory_json of estimate_memory(in.memory) with its terms, and
// the suggestions when it does not fit). The caller adds "cluster".
nlohmann::json estimate_json(const EstimateInputs& in, const StepEstimate& e, bool all_stages);

}  // namespace gpuplan
