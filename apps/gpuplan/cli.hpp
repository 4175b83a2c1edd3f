#pragma once
// The gpuplan program as a function: a command line in, what it prints and its exit status out. The program's
// main() and the command-line fuzzer both run it.
#include <string>
#include <vector>

namespace gpuplan::cli {

struct Outcome {
  int status = 0;        // 0 done, 2 bad input (one line on `err`), 1 an internal error
  std::string out, err;  // what goes to stdout and stderr
};

// Runs one command line; `args` excludes the program name.
Outcome run_command_line(const std::vector<std::string>& args);

}  // namespace gpuplan::cli
