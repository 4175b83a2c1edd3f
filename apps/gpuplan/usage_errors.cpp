// CLI11's usage errors as gpuplan's one-line errors: the option or argument at fault, what was given, and what is
// accepted (CLI11's own texts name neither what is accepted nor, for extras, the order they were given in).
#include "usage_errors.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpuplan/names.hpp"

namespace gpuplan::cli {

namespace {

std::string command_names(const CLI::App& app) {
  std::string out;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
    out += (out.empty() ? "" : ", ") + c->get_name();
  return out;
}

const CLI::App* chosen_command(const CLI::App& app) {
  const auto chosen = app.get_subcommands();
  return chosen.empty() ? nullptr : chosen.front();
}

// The first argument, in the order given, that the command did not take: an unknown option first, since a value
// left over (the "1" of "--max-tp 1") also spells the value of an option taken earlier ("--gpus 1").
std::string first_extra(const CLI::App& command, const std::vector<std::string>& args) {
  const std::vector<std::string> extras = command.remaining();
  for (const bool options_only : {true, false})
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string bare = args[i].substr(0, args[i].find('='));
      if (options_only && bare.rfind("-", 0) != 0) continue;
      if (std::find(extras.begin(), extras.end(), args[i]) != extras.end() ||
          std::find(extras.begin(), extras.end(), bare) != extras.end())
        return bare;
    }
  return extras.empty() ? std::string() : extras.back();
}

std::string extra_error(const CLI::App& command, const std::vector<std::string>& args) {
  const std::string extra = first_extra(command, args);
  const std::string name = command.get_name();
  if (extra.rfind("-", 0) != 0 || extra.size() < 2)
    return fmt::format("'{}': an argument {} does not take; accepted: options written --name VALUE (gpuplan {} --help)",
                       extra, name, name);
  std::vector<std::string> flags;
  for (const CLI::Option* o : command.get_options())
    for (const std::string& flag : o->get_lnames()) flags.push_back("--" + flag);
  const std::string hint = did_you_mean(extra, flags);
  return fmt::format("{}: not an option of {}{}; accepted: the options 'gpuplan {} --help' lists", extra, name,
                     hint.empty() ? "" : " (" + hint + ")", name);
}

// "--tp: 1 required INT missing", "--tp: At Most 1 required but received 2".
std::string mismatch_error(const std::string& what) {
  const std::string option = what.substr(0, what.find(':'));
  if (what.find("missing") != std::string::npos)
    return fmt::format("{}: no value given; accepted: a value after {} ({} VALUE)", option, option, option);
  return fmt::format("{}: given more than once; accepted: {} once", option, option);
}

// The option of `command` whose long name is `name` (without the dashes), or null.
const CLI::Option* long_option(const CLI::App& command, const std::string& name) {
  for (const CLI::Option* o : command.get_options())
    if (o->check_lname(name)) return o;
  return nullptr;
}

}  // namespace

std::string switch_value_error(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty()) return {};
  const auto named = app.get_subcommands([&](const CLI::App* c) { return c->get_name() == args.front(); });
  if (named.empty()) return {};
  // A switch's value is true or false, as in a JSON request: one rule for every switch, though CLI11 would also
  // take any number (3 reads as on) and yes/no/on/off.
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // what follows is not an option
    const std::size_t equals = arg.find('=');
    if (arg.rfind("--", 0) != 0 || equals == std::string::npos) continue;
    const CLI::Option* option = long_option(*named.front(), arg.substr(2, equals - 2));
    if (option == nullptr || option->get_expected_max() != 0) continue;
    const std::string value = arg.substr(equals + 1);
    if (value == "true" || value == "false") continue;
    const std::string name = arg.substr(0, equals);
    return fmt::format("{}: '{}' given to a switch; accepted: {} alone, {}=true or {}=false", name, value, name, name,
                       name);
  }
  return {};
}

std::string usage_error(const CLI::ParseError& e, const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* command = chosen_command(app);
  if (command == nullptr) {
    const bool named = !args.empty() && args.front().rfind("-", 0) != 0;
    return fmt::format("command: {}; accepted: one of {} (gpuplan --help)",
                       named ? "'" + args.front() + "' is not a command" : std::string("(none)"), command_names(app));
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) return extra_error(*command, args);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) return mismatch_error(e.what());
  std::string what = e.what();
  std::replace(what.begin(), what.end(), '\n', ' ');
  return fmt::format("{}; accepted: the options 'gpuplan {} --help' lists", what, command->get_name());
}

}  // namespace gpuplan::cli
