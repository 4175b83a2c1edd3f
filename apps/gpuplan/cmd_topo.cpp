// Placeholder until the command lands.
#include "commands.hpp"
namespace gpuplan::cli {
void add_topo_command(CLI::App& app) { app.add_subcommand("topo", "(not yet available)"); }
}  // namespace gpuplan::cli
