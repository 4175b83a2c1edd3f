// The built-in model catalog (data/models/*.json, compiled in).
#include <fmt/core.h>

#include <map>
#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/names.hpp"
#include "util/embedded_data.hpp"

namespace gpuplan {

namespace {

// name -> (file it came from, the entry's HF-style config). Each catalog file holds
// {"models": [{"name", "source", "published_params"?, "config": {...config.json keys...}}, ...]}.
struct Entry {
  std::string file;
  nlohmann::json config;
};

const std::map<std::string, Entry>& catalog() {
  static const std::map<std::string, Entry> entries = [] {
    std::map<std::string, Entry> out;
    for (const auto& f : detail::embedded_files()) {
      if (f.path.rfind("models/", 0) != 0) continue;
      const auto json = nlohmann::json::parse(f.content);  // malformed built-in data is a build defect
      if (!json.contains("models")) continue;
      for (const auto& item : json.at("models"))
        out.emplace(item.at("name").get<std::string>(), Entry{std::string(f.path), item.at("config")});
    }
    return out;
  }();
  return entries;
}

}  // namespace

std::vector<std::string> model_catalog_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : catalog()) names.push_back(name);
  return names;
}

bool is_catalog_model(std::string_view name) { return catalog().count(std::string(name)) > 0; }

ModelConfig model_from_catalog(std::string_view name) {
  const auto it = catalog().find(std::string(name));
  if (it == catalog().end()) {
    const std::string hint = did_you_mean(name, model_catalog_names());
    throw InputError("model", fmt::format("\"{}\" is not in the catalog{}", name, hint.empty() ? "" : " (" + hint + ")"),
                     "a catalog name (see 'gpuplan catalog models'), a config.json or a folder holding one");
  }
  ModelConfig m = model_from_hf_config(it->second.config.dump(), "data/" + it->second.file + ": " + it->first);
  m.name = it->first;
  return m;
}

}  // namespace gpuplan
