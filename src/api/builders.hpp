// The results built from the models' outputs (src/report), shared by the questions that report the same things:
// memory appears in memory, estimate and every plan; time and throughput in estimate and every plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/memory.hpp"

namespace gpuplan::api::detail {

MemoryResult memory_result(const MemoryInputs& in, const MemoryReport& report, const std::vector<Suggestion>& fixes,
                           bool all_stages);
// estimate_memory with every term and, when it does not fit, the suggestions.
MemoryResult memory_result(const MemoryInputs& in, bool all_stages);
TimeReport time_report(const StepEstimate& estimate);
// A sequence longer than the model's maximum positions (none when within them, or when they are not known).
std::optional<std::string> sequence_warning(const ModelConfig& model, std::int64_t seq_len);
// What in a job looks wrong without being an error.
std::vector<std::string> job_warnings(const MemoryInputs& in);
// MoE layers under Megatron-Core whose host synchronization is not priced (all but those padded to capacity): the
// warning, or none.
std::optional<std::string> moe_host_sync_warning(const ModelConfig& model, const TrainingConfig& training,
                                                 Framework framework);
// Throughput and MFU, with a warning when the MFU is above the best published for the GPU, and
// moe_host_sync_warning's.
ThroughputReport throughput_report(const StepEstimate& estimate, const EstimateInputs& in);

}  // namespace gpuplan::api::detail
