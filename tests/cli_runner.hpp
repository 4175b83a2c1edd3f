#pragma once
// Runs the real gpuplan program for command-line tests: exit status, standard output and standard error.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace gpuplan::test {

struct CliRun {
  int status = -1;
  std::string out;  // standard output
  std::string err;  // standard error
};

inline CliRun run_cli(const std::string& args) {
  CliRun r;
  char err_path[] = "/tmp/gpuplan_cli_stderr_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd < 0) return r;
  const std::string cmd = std::string(GPUPLAN_BINARY) + " " + args + " 2>" + err_path;
  FILE* p = popen(cmd.c_str(), "r");
  if (p != nullptr) {
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int raw = pclose(p);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }
  if (FILE* e = fdopen(fd, "r")) {
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
    fclose(e);
  }
  std::remove(err_path);
  return r;
}

}  // namespace gpuplan::test
