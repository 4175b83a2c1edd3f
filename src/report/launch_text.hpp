// The launch-file parts of the text reports: the framework line, what a --from file set, and the --emit files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/api.hpp"

namespace gpuplan::api::detail {

// "Framework: deepspeed (...)" with the values it changed on its own; nothing for Megatron-LM without changes.
std::string framework_text(const FrameworkReport& framework);
// What a --from file set, what gpuplan did not take from it, and what its framework would reject.
std::string launch_read_text(const std::optional<LaunchReadReport>& report);
// The --emit files: the paths written, or each file's text when no folder was given.
std::string launch_files_text(const std::optional<std::vector<LaunchFileReport>>& files,
                              const std::optional<std::vector<std::string>>& written);

}  // namespace gpuplan::api::detail
