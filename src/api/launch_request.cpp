// A request's `from` file turned into request options: the settings the file makes, as flat JSON, which the request
// reads before the options given beside the file (so those win). `plan --from` keeps the file's model, training
// and GPU count and searches the layout itself.
#include "api/launch_request.hpp"

#include <algorithm>

#include "api/fields.hpp"
#include "framework/launch.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::api::detail {

namespace {

const nlohmann::json* from_value(const nlohmann::json& request) {
  if (!request.is_object()) return nullptr;
  if (const auto flat = request.find("from"); flat != request.end()) return &*flat;
  if (const auto launch = request.find("launch"); launch != request.end() && launch->is_object())
    if (const auto nested = launch->find("from"); nested != launch->end()) return &*nested;
  return nullptr;
}

// The option's value as the request gives it, flat (`option`) or nested (`group.option`); null when not given.
const nlohmann::json* given_value(const nlohmann::json& request, std::string_view option, std::string_view group) {
  if (const auto flat = request.find(std::string(option)); flat != request.end()) return &*flat;
  const auto nested = request.find(std::string(group));
  if (nested == request.end() || !nested->is_object()) return nullptr;
  const auto value = nested->find(std::string(option));
  return value == nested->end() ? nullptr : &*value;
}

bool given(const nlohmann::json& request, std::string_view option, std::string_view group) {
  return given_value(request, option, group) != nullptr;
}

bool has_option(Question question, std::string_view name) {
  const auto options = request_options(question);
  return std::any_of(options.begin(), options.end(), [&](const OptionInfo& o) { return o.name == name; });
}

void add_known(Question question, const nlohmann::json& group, nlohmann::json& out) {
  for (const auto& [key, value] : group.items())
    if (has_option(question, key)) out[key] = value;
}

// A model the file builds but whose vocabulary it does not state takes --vocab into its config.
void supply_vocabulary(const nlohmann::json& request, nlohmann::json& options, const std::string& path) {
  if (!options.contains("model") || !options["model"].is_object() || !options["model"].contains("config")) return;
  nlohmann::json& config = options["model"]["config"];
  if (config.contains("vocab_size")) return;
  const nlohmann::json* vocab = given_value(request, "vocab", "model_overrides");
  if (vocab == nullptr)
    throw InputError("model_overrides.vocab", "(none): " + path + " does not state the vocabulary size",
                     "--vocab N (tokens before Megatron pads them)");
  // The command line gives text, a JSON request a number: the model's config takes the count.
  config["vocab_size"] = to_integer(*vocab, "model_overrides.vocab");
}

}  // namespace

nlohmann::json launch_options(Question question, const nlohmann::json& request) {
  const nlohmann::json* from = from_value(request);
  if (from == nullptr || !from->is_object() || !from->contains("text") || !from->at("text").is_string()) return {};
  const std::string path = from->value("path", std::string("launch file"));
  const framework::LaunchConfig config = framework::read_launch_config(path, from->at("text").get<std::string>());
  if (!config.errors.empty())
    throw InputError("launch.from", path + ": " + config.errors.front(),
                     "a file its framework accepts as written (options given beside it cannot mend it)");
  nlohmann::json options = nlohmann::json::object();
  add_known(question, config.model, options);
  add_known(question, config.training, options);
  if (question != Question::plan) {
    add_known(question, config.layout, options);
    add_known(question, config.timing, options);
  } else if (config.layout.contains("attention_backend")) {
    // The search picks the layout, not the kernels: the file's attention backend stays.
    options["attention_backend"] = config.layout.at("attention_backend");
  }
  if (config.gpus && has_option(question, "gpus")) options["gpus"] = *config.gpus;
  if (!options.contains("model") && !given(request, "model", "model") && !given(request, "params", "params"))
    throw InputError("model", "(none): " + path + " does not name the model",
                     "--model NAME (a catalog model, or a config.json)");
  // A model given beside the file replaces the file's (read after it); the file's stays here for the report.
  if (!given(request, "model", "model")) supply_vocabulary(request, options, path);
  return options;
}

}  // namespace gpuplan::api::detail
