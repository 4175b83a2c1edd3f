// Command-line syntax errors read like every other bad input: one line "gpuplan: error: OPTION: what was given;
// accepted: ...", exit status 2, whatever CLI11 found wrong (a bad number, a missing value, an unknown option, an
// extra argument, a repeated option, no command or an unknown one).
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

void expect_usage_error(const std::string& args, const std::string& starts) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args;
  EXPECT_EQ(r.err.rfind("gpuplan: error: " + starts, 0), 0u) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("; accepted: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

}  // namespace

TEST(UsageErrors, EveryKindIsOneLineWithWhatIsAccepted) {
  const std::string memory = "memory --model llama-3.1-8b ";
  expect_usage_error(memory + "--tp abc", "--tp: 'abc' is not a number; accepted: a whole number");
  expect_usage_error(memory + "--tp", "--tp: no value given; accepted: a value after --tp");
  expect_usage_error(memory + "--tp 2 --tp 4", "--tp: given more than once; accepted: --tp once");
  expect_usage_error(memory + "--bogus 3", "--bogus: not an option of memory");
  expect_usage_error(memory + "extra", "'extra': an argument memory does not take");
  expect_usage_error("model a b c", "'b': an argument model does not take");   // the first extra as given
  // Two unknown options: the first is named, not the value left behind by the second ("1", also --gpus' value).
  expect_usage_error("memory --model llama-3.1-8b --gpus 1 --price 2.5 --max-tp 1", "--price: not an option of memory");
  expect_usage_error("bogus", "command: 'bogus' is not a command; accepted: one of model, memory,");
  expect_usage_error("", "command: (none); accepted: one of model, memory,");
}

// A switch takes no value, or true/false as in a JSON request: `--all-stages=3` was read as on, `--sequence-parallel=maybe` named
// neither the switch's words nor the option in CLI11's own text.
TEST(UsageErrors, SwitchValuesAreTrueOrFalse) {
  const std::string memory = "memory --model llama-3.1-8b --gpus 8 ";
  expect_usage_error(memory + "--all-stages=3", "--all-stages: '3' given to a switch; accepted: --all-stages alone");
  expect_usage_error(memory + "--tp 2 --sequence-parallel=maybe", "--sequence-parallel: 'maybe' given to a switch");
  expect_usage_error("plan --model llama-3.1-8b --gpus 8 --json=2", "--json: '2' given to a switch");
  expect_usage_error(memory + "--all-stages=yes", "--all-stages: 'yes' given to a switch");  // as in JSON
  for (const char* fine : {"--all-stages", "--all-stages=true", "--all-stages=false"}) {
    const auto r = run_cli(memory + fine);
    EXPECT_EQ(r.status, 0) << fine << "\n" << r.err;
  }
  // An option that takes a value keeps its own checks: '=' is only its separator.
  EXPECT_EQ(run_cli(memory + "--tp=2").status, 0);
}
