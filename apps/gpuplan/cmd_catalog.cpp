// Placeholder until the command lands.
#include "commands.hpp"
namespace gpuplan::cli {
void add_catalog_command(CLI::App& app) { app.add_subcommand("catalog", "(not yet available)"); }
}  // namespace gpuplan::cli
