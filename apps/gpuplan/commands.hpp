#pragma once
// Each subcommand of the gpuplan program registers itself on the top-level app.
#include <CLI/CLI.hpp>

namespace gpuplan::cli {

void add_model_command(CLI::App& app);     // gpuplan model
void add_memory_command(CLI::App& app);    // gpuplan memory
void add_catalog_command(CLI::App& app);   // gpuplan catalog
void add_topo_command(CLI::App& app);      // gpuplan topo
void add_plan_command(CLI::App& app);      // gpuplan plan
void add_estimate_command(CLI::App& app);  // gpuplan estimate
void add_comm_command(CLI::App& app);      // gpuplan comm

}  // namespace gpuplan::cli
