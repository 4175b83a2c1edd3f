// gpuplan: plans large-model training. Memory per GPU, interconnect topology, collectives, step time and layouts.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "commands.hpp"
#include "gpuplan/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpuplan: how much memory large-model training needs on every GPU, and how to lay it out.\n"
               "Run 'gpuplan <command> --help' for the options of a command."};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_version_flag("--version", "gpuplan 0.1.0");
  gpuplan::cli::add_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every usage error is a clear one-line message and exit status 2.
    fmt::print(stderr, "gpuplan: error: {}\n", e.what());
    return 2;
  } catch (const gpuplan::InputError& e) {
    fmt::print(stderr, "gpuplan: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "gpuplan: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
