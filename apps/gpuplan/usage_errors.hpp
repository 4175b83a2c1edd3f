#pragma once
// Command-line syntax errors (CLI11's) told as every other bad input: one line naming the option or argument,
// what was given, and what is accepted.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gpuplan::cli {

// The message (without the "gpuplan: error: " prefix) for `error`, raised parsing `args` (in the order given).
std::string usage_error(const CLI::ParseError& error, const CLI::App& app, const std::vector<std::string>& args);

// The message for the first switch given a value other than true or false (`--all-stages=3`), which CLI11 would
// read as on; empty when there is none. Checked before parsing, since parsing runs the command.
std::string switch_value_error(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace gpuplan::cli
