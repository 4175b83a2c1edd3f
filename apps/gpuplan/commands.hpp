#pragma once
// The subcommands of the gpuplan program: each reads its flags into a request, asks the library, and prints the
// result as text or JSON.
#include <CLI/CLI.hpp>

namespace gpuplan::cli {

// Registers every subcommand on `app`.
void add_commands(CLI::App& app);

}  // namespace gpuplan::cli
