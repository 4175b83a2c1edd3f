// What the results say about launch files: the report of a file read (`from`) and the files written (`emit`).
#include "api/launch_results.hpp"

#include "framework/launch.hpp"
#include "framework/rules.hpp"
#include "util/choices.hpp"

namespace gpuplan::api::detail {

std::optional<LaunchReadReport> launch_report(const LaunchOptions& launch) {
  if (!launch.from) return std::nullopt;
  const std::string& path = launch.from->path.empty() ? std::string("launch file") : launch.from->path;
  const framework::LaunchConfig config = framework::read_launch_config(path, file_text(*launch.from, "launch.from"));
  LaunchReadReport report;
  report.file = path;
  report.format = config.format;
  report.framework = std::string(framework::name_of(config.framework));
  report.understood = config.understood;
  report.not_understood = config.not_understood;
  // The request got here with the vocabulary (or the whole model) given beside the file: changed_beside says which.
  std::erase(report.not_understood, std::string(framework::kVocabularyNotStated));
  report.changed_beside = launch.changed_beside;
  report.issues = config.issues;
  return report;
}

std::optional<std::vector<LaunchFileReport>> launch_files(const LaunchOptions& launch, const EmitSubject& subject) {
  if (!launch.emit) return std::nullopt;
  framework::EmitJob job;
  job.model_name = subject.model_name;
  job.model = subject.memory.model.value();
  job.training = subject.memory.training;
  job.layout = resolve_layout(subject.memory);
  job.priced_under = job.layout.framework;
  job.layout.framework = choices::parse(choices::kFramework, *launch.emit, "launch.emit");
  job.tp_overlap = subject.time.tp_overlap;
  job.dp_overlap = subject.time.dp_overlap;
  job.pp_overlap = subject.time.pp_overlap;
  job.overheads = subject.memory.overheads;
  job.gpus_per_node = std::max<std::int64_t>(1, subject.gpus_per_node);
  job.nodes = (job.layout.gpus + job.gpus_per_node - 1) / job.gpus_per_node;
  if (job.layout.gpus < job.gpus_per_node) job.gpus_per_node = job.layout.gpus;
  if (job.training.global_batch <= 0) job.training.global_batch = job.training.micro_batch * job.layout.dp;
  job.step_s = subject.step_s;
  job.memory_bytes = subject.memory_bytes;
  std::vector<LaunchFileReport> out;
  for (const framework::LaunchFile& file : framework::emit_launch(job)) out.push_back({file.name, file.text});
  return out;
}

}  // namespace gpuplan::api::detail
