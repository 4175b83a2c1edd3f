#pragma once
// gpuplan_host: what the front ends need beyond the pure core (gpuplan_core): reading and writing the user's
// files, the live NVIDIA driver (NVML), and threads for the layout search. The core never does any of this, so it
// builds for WebAssembly as it is. Errors are InputError naming the field the file was given for.
#include <string>
#include <string_view>

#include "gpuplan/model.hpp"
#include "gpuplan/plan.hpp"

namespace gpuplan {

// The text of a file ("-" is standard input). `field` names the option it was given for, in messages.
std::string read_text_file(const std::string& path, std::string_view field);
// Writes `text` to a file, replacing it.
void write_text_file(const std::string& path, std::string_view text, std::string_view field);

// A catalog name, a path to a config.json, or a folder holding one.
ModelConfig load_model(std::string_view name_or_path);

// Runs the layout search's workers on threads: as many as `threads` asks (0: one per core).
class ThreadRunner final : public ParallelRunner {
 public:
  int workers(int requested) const override;
  void run(int workers, const std::function<void(int worker)>& work) const override;
};

// search_plans with its workers on threads (PlanInputs::threads of them; 0: one per core).
PlanResult search_plans_threaded(const PlanInputs& inputs, ProgressCallback progress = {});

}  // namespace gpuplan
