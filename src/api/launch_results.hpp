// The launch-file parts of the results: the report of a `from` file, and the files `emit` writes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/resolve.hpp"

namespace gpuplan::api::detail {

// What the request's `from` file set and did not; nothing without one.
std::optional<LaunchReadReport> launch_report(const LaunchOptions& launch);

// A layout with its prediction, as an emitter writes it.
struct EmitSubject {
  std::string model_name;          // the model as the user named it (catalog name or path)
  const MemoryInputs& memory;      // model, training and layout of the job
  TimeOptions time;
  std::int64_t gpus_per_node = 8;  // GPUs of one host: what the launcher starts on each machine
  double step_s = 0;
  std::int64_t memory_bytes = 0;
};
// The launch files of `emit`'s framework for the subject; nothing without `emit`. InputError when that framework
// rejects the layout or cannot express the job.
std::optional<std::vector<LaunchFileReport>> launch_files(const LaunchOptions& launch, const EmitSubject& subject);

}  // namespace gpuplan::api::detail
