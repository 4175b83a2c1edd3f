// Placeholder until the command lands.
#include "commands.hpp"
namespace gpuplan::cli {
void add_memory_command(CLI::App& app) { app.add_subcommand("memory", "(not yet available)"); }
}  // namespace gpuplan::cli
