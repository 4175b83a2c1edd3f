#pragma once
// Renders memory estimates as a text table or as the JSON object `gpuplan memory --json` prints.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpuplan/memory.hpp"

namespace gpuplan {

// The JSON contract: per_gpu.{weights,...,total}, host.total, nvme.total, capacity, fits, stage, stages,
// suggestions.
nlohmann::json memory_json(const MemoryInputs& in, const MemoryReport& report, const std::vector<Suggestion>& fixes,
                           bool all_stages);

std::string memory_text(const MemoryInputs& in, const MemoryReport& report, const std::vector<Suggestion>& fixes,
                        bool all_stages, bool explain);

}  // namespace gpuplan
