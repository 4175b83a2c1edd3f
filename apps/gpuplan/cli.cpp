#include "cli.hpp"

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <sstream>

#include "commands.hpp"
#include "usage_errors.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/version.hpp"

namespace gpuplan::cli {

Outcome run_command_line(const std::vector<std::string>& args) {
  CLI::App app{"gpuplan: how much memory large-model training needs on every GPU, and how to lay it out.\n"
               "Run 'gpuplan <command> --help' for the options of a command."};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_version_flag("--version", "gpuplan " + std::string(kVersion));
  Outcome outcome;
  add_commands(app, outcome.out);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
  if (const std::string bad = switch_value_error(app, args); !bad.empty()) {
    outcome.err = fmt::format("gpuplan: error: {}\n", bad);
    outcome.status = 2;
    return outcome;
  }
  try {
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    std::ostringstream out, err;
    outcome.status = app.exit(e, out, err);
    outcome.out += out.str();
    outcome.err += err.str();
  } catch (const CLI::ParseError& e) {
    // Every usage error is a clear one-line message and exit status 2.
    outcome.err = fmt::format("gpuplan: error: {}\n", usage_error(e, app, args));
    outcome.status = 2;
  } catch (const InputError& e) {
    outcome.err = fmt::format("gpuplan: error: {}\n", e.what());
    outcome.status = 2;
  } catch (const std::exception& e) {
    outcome.err = fmt::format("gpuplan: internal error: {}\n", e.what());
    outcome.status = 1;
  }
  return outcome;
}

}  // namespace gpuplan::cli
