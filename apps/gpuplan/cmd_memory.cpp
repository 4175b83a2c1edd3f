// gpuplan memory: every byte on every GPU, by component and pipeline stage, and what to change when it does not fit.
#include <fmt/core.h>

#include <memory>

#include "commands.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/report.hpp"
#include "memory_options.hpp"

namespace gpuplan::cli {

void add_memory_command(CLI::App& app) {
  struct Args {
    MemoryOptions memory;
    bool json = false;
    bool all_stages = false;
    bool explain = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("memory", "Per-GPU memory of a training job, by component and pipeline stage");
  args->memory.add_to(*cmd);
  cmd->add_flag("--json", args->json, "Print JSON (keys: per_gpu.*, host.total, nvme.total, capacity, fits, stage)");
  cmd->add_flag("--all-stages", args->all_stages, "Report every pipeline stage, not only the worst");
  cmd->add_flag("--explain", args->explain, "List every term with its formula source");
  cmd->callback([args] {
    const MemoryInputs in = args->memory.resolve();
    const MemoryReport report = estimate_memory(in, args->explain || args->json);
    const std::vector<Suggestion> fixes = report.fits ? std::vector<Suggestion>{} : suggest_fixes(in);
    if (args->json) fmt::print("{}\n", memory_json(in, report, fixes, args->all_stages).dump(2));
    else fmt::print("{}", memory_text(in, report, fixes, args->all_stages, args->explain));
  });
}

}  // namespace gpuplan::cli
