// Reads a Hugging Face config.json into a ModelConfig: dispatch on model_type and the typed key reader.
#include <cmath>
#include <cstdint>
#include <fmt/core.h>

#include <map>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"
#include "io/hf_config_reader.hpp"
#include "util/json_input.hpp"

namespace gpuplan {

namespace detail {

const nlohmann::json* HfConfigReader::get(const char* key) const {
  const auto it = json_.find(key);
  if (it == json_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool HfConfigReader::has(const char* key) const { return get(key) != nullptr; }

bool HfConfigReader::is_null(const char* key) const {
  const auto it = json_.find(key);
  return it != json_.end() && it->is_null();
}

std::optional<std::int64_t> HfConfigReader::find_int(std::initializer_list<const char*> keys) const {
  for (const char* key : keys) {
    const nlohmann::json* v = get(key);
    if (v == nullptr) continue;
    // Some exporters write integral sizes as 4096.0; anything fractional is a mistake.
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw InputError(field(key), v->dump(), "an integer below 2^63");
    if (v->is_number_integer()) return v->get<std::int64_t>();
    if (v->is_number_float()) {
      const double d = v->get<double>();
      // Range first: converting a double beyond int64 is undefined behaviour (found by the fuzzer).
      if (std::fabs(d) < 9.2e18 && d == static_cast<double>(static_cast<std::int64_t>(d)))
        return static_cast<std::int64_t>(d);
    }
    throw InputError(field(key), v->dump(), "an integer");
  }
  return std::nullopt;
}

std::int64_t HfConfigReader::integer(std::initializer_list<const char*> keys) const {
  if (auto v = find_int(keys)) return *v;
  std::string names;
  for (const char* key : keys) names += (names.empty() ? "" : " or ") + std::string(key);
  throw InputError(field(*keys.begin()), "missing", "an integer (key " + names + ")");
}

std::int64_t HfConfigReader::integer(std::initializer_list<const char*> keys, std::int64_t fallback) const {
  return find_int(keys).value_or(fallback);
}

bool HfConfigReader::boolean(const char* key, bool fallback) const {
  const nlohmann::json* v = get(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) throw InputError(field(key), v->dump(), "true or false");
  return v->get<bool>();
}

std::string HfConfigReader::string(const char* key, const std::string& fallback) const {
  const nlohmann::json* v = get(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) throw InputError(field(key), v->dump(), "a string");
  return v->get<std::string>();
}

std::vector<std::int64_t> HfConfigReader::int_list(const char* key) const {
  const nlohmann::json* v = get(key);
  if (v == nullptr) return {};
  if (!v->is_array()) throw InputError(field(key), v->dump(), "a list of integers");
  std::vector<std::int64_t> out;
  for (const auto& item : *v) {
    if (!item.is_number_integer()) throw InputError(field(key), v->dump(), "a list of integers");
    out.push_back(item.get<std::int64_t>());
  }
  return out;
}

}  // namespace detail

namespace {

using Reader = void (*)(const detail::HfConfigReader&, const std::string&, ModelConfig&);

const std::map<std::string, Reader>& readers() {
  static const std::map<std::string, Reader> table = {
      {"gpt2", [](const auto& r, const auto&, auto& m) { detail::read_gpt2(r, m); }},
      {"gpt_neox", [](const auto& r, const auto&, auto& m) { detail::read_gpt_neox(r, m); }},
      {"falcon", detail::read_falcon},
      {"RefinedWeb", detail::read_falcon},
      {"RefinedWebModel", detail::read_falcon},
      {"bloom", [](const auto& r, const auto&, auto& m) { detail::read_bloom(r, m); }},
      {"opt", [](const auto& r, const auto&, auto& m) { detail::read_opt(r, m); }},
      {"llama", detail::read_llama_like},
      {"mistral", detail::read_llama_like},
      {"mixtral", detail::read_llama_like},
      {"qwen2", detail::read_llama_like},
      {"qwen2_moe", detail::read_llama_like},
      {"qwen3", detail::read_llama_like},
      {"qwen3_moe", detail::read_llama_like},
      {"gemma", detail::read_llama_like},
      {"gemma2", detail::read_llama_like},
      {"phi3", detail::read_llama_like},
      {"olmo2", detail::read_llama_like},
      {"smollm3", detail::read_llama_like},
      {"deepseek_v2", detail::read_deepseek},
      {"deepseek_v3", detail::read_deepseek},
      {"megatron", [](const auto& r, const auto&, auto& m) { detail::read_megatron_args(r, m); }},
  };
  return table;
}

std::string accepted_types() {
  std::string out;
  for (const auto& [name, reader] : readers()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

ModelConfig model_from_hf_config(std::string_view json_text, std::string_view origin_view) {
  const std::string origin(origin_view);
  const nlohmann::json config = detail::parse_json_input(json_text, origin, "a Hugging Face config.json");
  if (!config.is_object()) throw InputError(origin, "a JSON " + std::string(config.type_name()), "a JSON object");
  const detail::HfConfigReader r(config, origin);
  if (!r.has("model_type")) throw InputError(r.field("model_type"), "missing", accepted_types());
  const std::string type = r.string("model_type", "");
  const auto it = readers().find(type);
  if (it == readers().end()) throw InputError(r.field("model_type"), "\"" + type + "\"", accepted_types());

  ModelConfig m;
  m.name = origin;
  m.model_type = type;
  it->second(r, type, m);
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  validate(m);
  return m;
}

}  // namespace gpuplan
