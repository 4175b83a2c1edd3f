// gpuplan: plans large-model training. Memory per GPU, interconnect topology, collectives, step time and layouts.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const gpuplan::cli::Outcome outcome = gpuplan::cli::run_command_line(args);
  std::fwrite(outcome.out.data(), 1, outcome.out.size(), stdout);
  std::fwrite(outcome.err.data(), 1, outcome.err.size(), stderr);
  return outcome.status;
}
