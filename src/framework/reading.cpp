// The readers' shared bookkeeping and the frameworks' option lists, loaded once from the embedded data/frameworks/.
#include "framework/reading.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "util/embedded_data.hpp"
#include "util/from_chars.hpp"
#include "util/choices.hpp"

namespace gpuplan::framework {

namespace {

// Parsed on each call: every caller keeps what it needs in a static of its own (initialised once, thread-safe).
nlohmann::json embedded(std::string_view path) {
  for (const auto& file : detail::embedded_files())
    if (file.path == path) return nlohmann::json::parse(file.content);
  throw std::logic_error("data/" + std::string(path) + " is not embedded");
}

// The file leaves out what argparse derives: the destination from the flag's name, the type from its kind.
MegatronFlag flag_from(const std::string& name, const nlohmann::json& entry) {
  MegatronFlag flag;
  std::string derived = name.substr(name.find_first_not_of('-'));
  std::replace(derived.begin(), derived.end(), '-', '_');
  flag.dest = entry.value("dest", derived);
  const std::string kind = entry.at("kind").get<std::string>();
  flag.kind = kind == "flag" ? MegatronFlag::Kind::flag : kind == "list" ? MegatronFlag::Kind::list : MegatronFlag::Kind::value;
  flag.type = entry.value("type", kind == "flag" ? std::string("bool") : kind == "list" ? std::string("list") : std::string("str"));
  if (entry.contains("choices"))
    for (const auto& choice : entry.at("choices")) flag.choices.push_back(choice.is_string() ? choice.get<std::string>() : choice.dump());
  flag.sets = entry.value("sets", true);
  flag.relevant = entry.value("relevant", false);
  return flag;
}

const std::map<std::string, MegatronFlag, std::less<>>& megatron_flags() {
  static const std::map<std::string, MegatronFlag, std::less<>> flags = [] {
    std::map<std::string, MegatronFlag, std::less<>> out;
    const nlohmann::json catalog = embedded("frameworks/megatron_flags.json");
    for (const auto& [name, entry] : catalog.at("flags").items())
      out.emplace(name, flag_from(name, entry));
    return out;
  }();
  return flags;
}

using KeyTypes = std::map<std::string, std::string, std::less<>>;

KeyTypes key_types(std::string_view path) {
  KeyTypes out;
  const nlohmann::json catalog = embedded(path);
  for (const auto& [key, type] : catalog.at("keys").items()) out.emplace(key, type.get<std::string>());
  return out;
}

const std::string* find_type(const KeyTypes& keys, std::string_view dotted) {
  const auto found = keys.find(dotted);
  return found == keys.end() ? nullptr : &found->second;
}

}  // namespace

void take(LaunchConfig& config, nlohmann::json& group, std::string_view option, const nlohmann::json& value,
          std::string_view from) {
  group[std::string(option)] = value;
  config.understood.push_back(std::string(from) + " -> " + std::string(option) + " " + value_text(value));
}

MegatronAttention megatron_attention(std::string_view value) {
  constexpr std::string_view kEnum = "AttnBackend.";   // the enum's own spelling, as Python prints it
  if (value.substr(0, kEnum.size()) == kEnum) value.remove_prefix(kEnum.size());
  if (value == "unfused" || value == "local") return {"eager", ""};
  for (std::string_view backend : {"auto", "fused", "flash"})
    if (value == backend) return {"flash", backend};
  return {"flash", ""};
}

void take_attention_backend(LaunchConfig& config, std::string_view backend, std::string_view from) {
  const MegatronAttention read = megatron_attention(backend);
  take(config, config.layout, "attention", std::string(read.attention), from);
  if (!read.backend.empty()) take(config, config.layout, "attention_backend", std::string(read.backend), from);
  else if (read.attention == "flash")
    config.not_understood.push_back(std::string(from) + " (priced as Transformer Engine's own choice, auto)");
}

void take_moe_dispatcher(LaunchConfig& config, std::string_view dispatcher, std::string_view from) {
  if (choices::find(choices::kMoeDispatcher, dispatcher) != nullptr)
    take(config, config.training, "moe_dispatcher", std::string(dispatcher), from);
  else config.not_understood.push_back(std::string(from) + " (priced as the all-to-all dispatcher)");
}

std::string value_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("name_or_path")) return value.at("name_or_path").get<std::string>();
  return value.dump();
}

std::optional<std::int64_t> whole_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const char* first = text.data();
  const char* last = first + text.size();
  std::int64_t integer = 0;
  const auto whole = std::from_chars(first, last, integer);
  if (whole.ec == std::errc() && whole.ptr == last) return integer;
  double number = 0;
  const auto parsed = detail::from_chars_double(first, last, number);
  if (parsed.ec != std::errc() || parsed.ptr != last || !std::isfinite(number) || std::floor(number) != number ||
      std::fabs(number) > 9e15)
    return std::nullopt;
  return static_cast<std::int64_t>(number);
}

bool same_architecture(const ModelConfig& a, const ModelConfig& b) {
  return a.layers == b.layers && a.hidden == b.hidden && a.heads == b.heads && a.kv_heads == b.kv_heads &&
         a.vocab == b.vocab && a.moe.routed_experts == b.moe.routed_experts && a.mla.enabled == b.mla.enabled &&
         count_params(a).total == count_params(b).total;
}

const MegatronFlag* megatron_flag(std::string_view name) {
  const auto& flags = megatron_flags();
  const auto found = flags.find(name);
  return found == flags.end() ? nullptr : &found->second;
}

const std::vector<std::string>& megatron_flag_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, flag] : megatron_flags()) out.push_back(name);
    return out;
  }();
  return names;
}

std::string_view megatron_flags_source() {
  static const std::string source = embedded("frameworks/megatron_flags.json").at("source").get<std::string>();
  return source;
}

bool deepspeed_top_level_key(std::string_view key) {
  static const std::vector<std::string> keys =
      embedded("frameworks/deepspeed_keys.json").at("top_level_keys").get<std::vector<std::string>>();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

const std::vector<std::string>* deepspeed_strict_section(std::string_view section) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> sections = [] {
    std::map<std::string, std::vector<std::string>, std::less<>> out;
    const nlohmann::json catalog = embedded("frameworks/deepspeed_keys.json");
    for (const auto& [name, keys] : catalog.at("strict_sections").items())
      out.emplace(name, keys.get<std::vector<std::string>>());
    return out;
  }();
  const auto found = sections.find(section);
  return found == sections.end() ? nullptr : &found->second;
}

const KeyTypes& torchtitan_key_types() {
  static const KeyTypes keys = key_types("frameworks/torchtitan_keys.json");
  return keys;
}

const std::string* torchtitan_key_type(std::string_view dotted) { return find_type(torchtitan_key_types(), dotted); }

std::vector<std::string> torchtitan_keys() {
  std::vector<std::string> names;
  for (const auto& [key, type] : torchtitan_key_types()) names.push_back(key);
  return names;
}

const std::string* nemo_key_type(std::string_view dotted) {
  static const KeyTypes keys = key_types("frameworks/nemo_keys.json");
  return find_type(keys, dotted);
}

}  // namespace gpuplan::framework
