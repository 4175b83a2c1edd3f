#pragma once
// The command line of a question: its request's options as flags (from gpuplan::api::request_options), collected
// as the flat JSON the library reads, and the library's field names turned back into those flags in messages.
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::cli {

// The flag of an option: --seq-len for seq_len; a positional-only option by its name in capitals (COLLECTIVE).
std::string flag_of(const api::OptionInfo& option);

// Registers an option on `command`; it writes its value, as given, into `*request` under the option's name.
void add_option(CLI::App& command, const api::OptionInfo& option, const std::shared_ptr<nlohmann::json>& request);
// Registers every option of `question`.
void add_options(CLI::App& command, api::Question question, const std::shared_ptr<nlohmann::json>& request);

// The same error with the request fields it names as flags of `question`.
InputError with_flags(const InputError& error, api::Question question);

}  // namespace gpuplan::cli
