#pragma once
// The subcommands of the gpuplan program: each reads its flags into a request, asks the library, and prints the
// result as text or JSON.
#include <CLI/CLI.hpp>
#include <string>

namespace gpuplan::cli {

// Registers every subcommand on `app`; the one that runs appends what it prints to `out`.
void add_commands(CLI::App& app, std::string& out);

}  // namespace gpuplan::cli
