// The defaults of a NeMo recipe read from its Python source without running it: function signatures, keyword
// arguments of the few calls that build the trainer, and the model config class. This covers the recipes as NeMo
// writes them (nemo/collections/llm/recipes/*.py); anything computed at run time is left to the overrides.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "framework/nemo_values.hpp"
#include "framework/reading.hpp"
#include "gpuplan/model_io.hpp"
#include "util/embedded_data.hpp"

#include <nlohmann/json.hpp>

namespace gpuplan::framework {

namespace {

struct Argument {
  std::string name, value;
  int line = 0;
};

int line_at(std::string_view text, std::size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

std::string trimmed(std::string_view s) {
  std::size_t start = 0, end = s.size();
  while (start < end && std::isspace(static_cast<unsigned char>(s[start])) != 0) ++start;
  while (end > start && std::isspace(static_cast<unsigned char>(s[end - 1])) != 0) --end;
  return std::string(s.substr(start, end - start));
}

// The arguments between the '(' at `open` and its ')', split at top-level commas, "name: type = value" and
// "name=value" alike. Strings and nested brackets are skipped whole.
std::vector<Argument> arguments_at(std::string_view text, std::size_t open) {
  std::vector<Argument> out;
  int depth = 0;
  char quote = 0;
  std::size_t start = open + 1;
  for (std::size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    if ((c == ',' && depth == 1) || depth == 0) {
      const std::string part = trimmed(text.substr(start, i - start));
      const std::size_t equals = part.find('=');
      if (equals != std::string::npos && part.find("==") == std::string::npos) {
        std::string name = trimmed(part.substr(0, equals));
        if (const std::size_t colon = name.find(':'); colon != std::string::npos) name = trimmed(name.substr(0, colon));
        out.push_back({name, trimmed(part.substr(equals + 1)), line_at(text, start)});
      }
      start = i + 1;
      if (depth == 0) break;
    }
  }
  return out;
}

// The parameters of the first definition `head` ("def trainer(").
std::vector<Argument> arguments_of(std::string_view text, std::string_view head) {
  const std::size_t at = text.find(head);
  if (at == std::string_view::npos) return {};
  return arguments_at(text, at + head.size() - 1);
}

// The keyword arguments of the first run.Config(CLASS, ...) call.
std::vector<Argument> config_of(std::string_view text, std::string_view config_class) {
  constexpr std::string_view kCall = "run.Config(";
  for (std::size_t at = text.find(kCall); at != std::string_view::npos; at = text.find(kCall, at + 1)) {
    std::size_t name = at + kCall.size();
    while (name < text.size() && std::isspace(static_cast<unsigned char>(text[name])) != 0) ++name;
    if (text.substr(name, config_class.size()) != config_class) continue;
    const std::size_t after = name + config_class.size();
    if (after < text.size() && (text[after] == ',' || text[after] == ')'))
      return arguments_at(text, at + kCall.size() - 1);
  }
  return {};
}

std::string value_of(const std::vector<Argument>& arguments, const std::string& name, const std::string& fallback) {
  for (const Argument& a : arguments)
    if (a.name == name) return a.value;
  return fallback;
}

// Keyword arguments of a call, with trainer()'s parameters replaced by their defaults.
void bind_arguments(NemoValues& out, std::string_view path, const std::vector<Argument>& call, const std::string& prefix,
          const std::vector<Argument>& parameters) {
  for (const Argument& a : call) {
    if (a.value.find('(') != std::string::npos) continue;   // nested configs are read on their own
    const std::string value = value_of(parameters, a.value, a.value);
    out[prefix + a.name] = {value, fmt::format("{}:{}", path, a.line)};
  }
}

void read_precision_and_optimizer(NemoValues& out, std::string_view path, std::string_view text) {
  for (const char* plugin : {"bf16_mixed()", "fp16_mixed()", "bf16_with_fp8_mixed()"}) {
    const std::size_t at = text.find(std::string("plugins=") + plugin);
    if (at == std::string_view::npos) continue;
    const std::string precision = plugin[0] == 'f' ? "16-mixed" : "bf16-mixed";
    out["trainer.plugins.precision"] = {precision, fmt::format("{}:{}", path, line_at(text, at))};
    if (std::string_view(plugin).find("fp8") != std::string_view::npos)
      out["trainer.plugins.fp8"] = {"hybrid", fmt::format("{}:{}", path, line_at(text, at))};
  }
  const std::vector<Argument> mixed = config_of(text, "nl.MegatronMixedPrecision");
  for (const Argument& a : mixed)
    if (a.name == "precision") out["trainer.plugins.precision"] = {trimmed(a.value), fmt::format("{}:{}", path, a.line)};
  const std::size_t optim = text.find("optim=distributed_fused_adam");
  if (optim != std::string_view::npos)
    out["optim.config.use_distributed_optimizer"] = {"True", fmt::format("{}:{}", path, line_at(text, optim))};
}

void read_model_class(NemoValues& out, std::string_view path, std::string_view text) {
  const std::size_t at = text.find("config=run.Config(");
  if (at == std::string_view::npos) return;
  const std::size_t start = at + std::string_view("config=run.Config(").size();
  const std::size_t end = text.find_first_of(",)", start);
  if (end == std::string_view::npos) return;
  out["model.config"] = {trimmed(text.substr(start, end - start)), fmt::format("{}:{}", path, line_at(text, at))};
}

}  // namespace

NemoValues recipe_values_from_python(std::string_view path, std::string_view text) {
  NemoValues out;
  std::vector<Argument> parameters = arguments_of(text, "def trainer(");
  // pretrain_recipe() passes its own num_nodes and num_gpus_per_node to trainer(): its defaults win.
  for (const Argument& a : arguments_of(text, "def pretrain_recipe("))
    for (Argument& p : parameters)
      if (p.name == a.name) p.value = a.value;
  bind_arguments(out, path, config_of(text, "nl.MegatronStrategy"), "trainer.strategy.", parameters);
  bind_arguments(out, path, config_of(text, "DistributedDataParallelConfig"), "trainer.strategy.ddp.", parameters);
  bind_arguments(out, path, config_of(text, "nl.Trainer"), "trainer.", parameters);
  bind_arguments(out, path, config_of(text, "MockDataModule"), "data.", parameters);
  read_precision_and_optimizer(out, path, text);
  read_model_class(out, path, text);
  return out;
}

namespace {

const nlohmann::json& recipes() {
  static const nlohmann::json data = [] {
    for (const auto& f : detail::embedded_files())
      if (f.path == "frameworks/nemo_recipes.json") return nlohmann::json::parse(f.content);
    throw std::logic_error("data/frameworks/nemo_recipes.json is not embedded");
  }();
  return data;
}

}  // namespace

std::optional<NemoValues> builtin_recipe(std::string_view factory) {
  const auto& all = recipes().at("recipes");
  const auto found = all.find(std::string(factory));
  if (found == all.end()) return std::nullopt;
  NemoValues out;
  const std::string from = "recipe " + std::string(factory) + " (" + found->at("where").get<std::string>() + ")";
  for (const auto& [key, value] : found->at("values").items()) out[key] = {value.get<std::string>(), from};
  return out;
}

std::optional<std::string> nemo_model_of(std::string_view config_class) {
  const auto& models = recipes().at("model_configs");
  const auto found = models.find(std::string(config_class));
  if (found == models.end()) return std::nullopt;
  return found->get<std::string>();
}

std::optional<std::string> nemo_factory_of(std::string_view model_name, const ModelConfig& model) {
  for (const auto& [factory, recipe] : recipes().at("recipes").items()) {
    const auto catalog = nemo_model_of(recipe.at("values").at("model.config").get<std::string>());
    if (catalog && (*catalog == model_name || same_architecture(model_from_catalog(*catalog), model))) return factory;
  }
  return std::nullopt;
}

}  // namespace gpuplan::framework
