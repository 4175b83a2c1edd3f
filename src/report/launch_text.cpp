// The text of the launch-file parts of memory, estimate and plan.
#include "report/launch_text.hpp"

#include <fmt/format.h>

namespace gpuplan::api::detail {

std::string framework_text(const FrameworkReport& framework) {
  if (framework.name == "megatron" && framework.rewrites.empty()) return {};
  std::string out = fmt::format("Framework: {} ({})\n", framework.name, framework.release);
  for (const std::string& rewrite : framework.rewrites) out += fmt::format("  changed by the framework: {}\n", rewrite);
  return out;
}

std::string launch_read_text(const std::optional<LaunchReadReport>& report) {
  if (!report) return {};
  std::string out = fmt::format("\nRead {} ({}, framework {}):\n", report->file, report->format, report->framework);
  for (const std::string& line : report->understood) out += fmt::format("  took       {}\n", line);
  for (const std::string& line : report->not_understood) out += fmt::format("  not taken  {}\n", line);
  for (const std::string& line : report->changed_beside) out += fmt::format("  beside it  {}\n", line);
  if (!report->issues.empty()) out += fmt::format("{} would reject the file as written:\n", report->framework);
  for (const std::string& line : report->issues) out += fmt::format("  - {}\n", line);
  return out;
}

std::string launch_files_text(const std::optional<std::vector<LaunchFileReport>>& files,
                              const std::optional<std::vector<std::string>>& written) {
  if (!files) return {};
  if (written) {
    std::string out = "\nWrote";
    for (const std::string& path : *written) out += " " + path;
    return out + "\n";
  }
  std::string out;
  for (const LaunchFileReport& file : *files)
    out += fmt::format("\n----- {} (--out DIR writes it) -----\n{}", file.name, file.text);
  return out;
}

}  // namespace gpuplan::api::detail
