// libFuzzer target: the command line itself. The input is a command line, one argument per line; it runs in
// process through the same function as the gpuplan program. It must finish with status 0, or 2 and one line
// "gpuplan: error: ..." (never 1, an internal error), and never print a NaN or an infinity.
//
// Files: arguments are read relative to the test data (tests/data), so the fuzzer reaches the real parsers; an
// argument that could leave it (an absolute path, "..", "~"), stdin ("-") or --out (which writes) skips the input.
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace {

constexpr std::size_t kMaxArguments = 48;
constexpr std::size_t kMaxArgumentLength = 256;

bool safe(const std::string& argument) {
  return argument != "-" && argument != "--out" && argument.rfind("--out=", 0) != 0 && argument.front() != '/' &&
         argument.front() != '~' && argument.find("..") == std::string::npos;
}

// Splits the input at newlines; false for an input the fuzzer should not run.
bool arguments_of(std::string_view text, std::vector<std::string>& args) {
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string argument(text.substr(start, end - start));
    if (!argument.empty()) {
      if (!safe(argument) || argument.size() > kMaxArgumentLength) return false;
      args.push_back(std::move(argument));
    }
    start = end + 1;
  }
  return !args.empty() && args.size() <= kMaxArguments;
}

bool letter(const std::string& out, std::size_t i) {
  return i < out.size() && std::isalpha(static_cast<unsigned char>(out[i])) != 0;
}

// Whether `out[i]` joins two words of a flag or an identifier ("for-nan-in", "grad_nan_check"): a '-' or '_'
// between letters. A sign before a number ("-nan", "= -inf") is not one.
bool joins_words(const std::string& out, std::size_t i) {
  return i < out.size() && (out[i] == '-' || out[i] == '_') && i > 0 && letter(out, i - 1) && letter(out, i + 1);
}

// "nan", "-inf", "inf": a number printed from a non-finite value ("Infinity Fabric", "info" and the flag
// "--no-check-for-nan-in-loss-and-grad" are words).
bool prints_non_finite(const std::string& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0 && (letter(out, i - 1) || joins_words(out, i - 1))) continue;
    for (std::string_view word : {"nan", "inf"}) {
      if (out.size() - i < word.size()) continue;
      bool match = true;
      for (std::size_t k = 0; k < word.size() && match; ++k)
        match = std::tolower(static_cast<unsigned char>(out[i + k])) == word[k];
      const std::size_t after = i + word.size();
      if (match && !letter(out, after) && !joins_words(out, after)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (chdir(GPUPLAN_TEST_DATA_DIR) != 0) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  if (!arguments_of(std::string_view(reinterpret_cast<const char*>(data), size), args)) return 0;
  const gpuplan::cli::Outcome outcome = gpuplan::cli::run_command_line(args);
  if (outcome.status == 1) {
    std::fprintf(stderr, "internal error: %s", outcome.err.c_str());
    std::abort();
  }
  if (outcome.status == 2 && (outcome.err.rfind("gpuplan: error: ", 0) != 0 ||
                              outcome.err.find('\n') != outcome.err.size() - 1)) {
    std::fprintf(stderr, "bad input must be one line 'gpuplan: error: ...', got: %s", outcome.err.c_str());
    std::abort();
  }
  if (prints_non_finite(outcome.out)) {
    std::fprintf(stderr, "printed a non-finite number:\n%s", outcome.out.c_str());
    std::abort();
  }
  return 0;
}
