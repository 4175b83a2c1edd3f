// Placeholder until the command lands.
#include "commands.hpp"
namespace gpuplan::cli {
void add_model_command(CLI::App& app) { app.add_subcommand("model", "(not yet available)"); }
}  // namespace gpuplan::cli
