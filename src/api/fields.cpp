// Reading a request's fields from JSON (nested by path, or flat by option name) and writing them back. Values
// arrive as JSON numbers, booleans and strings, or as the text a command line gives; every one is checked here, so
// every option gets the same rules.
#include "api/fields.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/units.hpp"
#include "util/from_chars.hpp"

namespace gpuplan::api::detail {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

template <typename T>
struct KindOf;
template <> struct KindOf<std::int64_t*> { static constexpr OptionKind kind = OptionKind::integer; };
template <> struct KindOf<std::optional<std::int64_t>*> { static constexpr OptionKind kind = OptionKind::integer; };
template <> struct KindOf<double*> { static constexpr OptionKind kind = OptionKind::number; };
template <> struct KindOf<std::optional<double>*> { static constexpr OptionKind kind = OptionKind::number; };
template <> struct KindOf<std::string*> { static constexpr OptionKind kind = OptionKind::text; };
template <> struct KindOf<std::optional<std::string>*> { static constexpr OptionKind kind = OptionKind::text; };
template <> struct KindOf<bool*> { static constexpr OptionKind kind = OptionKind::flag; };
template <> struct KindOf<std::optional<bool>*> { static constexpr OptionKind kind = OptionKind::flag; };
template <> struct KindOf<std::vector<std::int64_t>*> { static constexpr OptionKind kind = OptionKind::integer_list; };
template <> struct KindOf<std::vector<std::string>*> { static constexpr OptionKind kind = OptionKind::text_list; };
template <> struct KindOf<std::optional<FileInput>*> { static constexpr OptionKind kind = OptionKind::file; };
template <> struct KindOf<std::vector<FileInput>*> { static constexpr OptionKind kind = OptionKind::file_list; };
template <> struct KindOf<ModelSource*> { static constexpr OptionKind kind = OptionKind::model; };

std::string_view default_value_name(OptionKind kind) {
  switch (kind) {
    case OptionKind::integer: return "INT";
    case OptionKind::number: return "NUMBER";
    case OptionKind::text: return "TEXT";
    case OptionKind::flag: return "";
    case OptionKind::integer_list: return "LIST";
    case OptionKind::text_list: return "LIST";
    case OptionKind::file: return "FILE";
    case OptionKind::file_list: return "FILE";
    case OptionKind::model: return "NAME|PATH";
  }
  return "";
}

// The text of a value as given, for messages.
std::string shown(const json& v) { return v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump(); }

[[noreturn]] void reject(std::string_view path, const json& v, std::string_view accepted) {
  throw InputError(std::string(path), shown(v), std::string(accepted));
}

double to_number(const json& v, std::string_view path) {
  constexpr const char* kAccepted = "a number";
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) reject(path, v, kAccepted);
  const std::string& s = v.get_ref<const std::string&>();
  double x = 0;
  const auto [end, ec] = gpuplan::detail::from_chars_double(s.data(), s.data() + s.size(), x);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(x)) reject(path, v, kAccepted);
  return x;
}

std::string to_text(const json& v, std::string_view path) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();  // sizes and counts given as numbers
  reject(path, v, "text");
}

bool to_flag(const json& v, std::string_view path) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
  }
  reject(path, v, "true or false");
}

// A list as JSON array, or one value, or comma-separated text ("1,2,4").
template <typename Convert>
auto to_list(const json& v, std::string_view path, Convert convert) {
  std::vector<decltype(convert(v, path))> out;
  if (v.is_array()) {
    for (const auto& item : v) out.push_back(convert(item, path));
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    std::size_t start = 0;
    while (start <= s.size()) {
      const std::size_t comma = std::min(s.find(',', start), s.size());
      out.push_back(convert(json(s.substr(start, comma - start)), path));
      start = comma + 1;
    }
  } else {
    out.push_back(convert(v, path));
  }
  return out;
}

// A file: its path, or {"path": ..., "text": ...}, or {"text": ...}.
FileInput to_file(const json& v, std::string_view path) {
  if (v.is_string()) return FileInput{v.get<std::string>(), std::nullopt};
  if (v.is_object() && (v.contains("path") || v.contains("text"))) {
    FileInput f;
    if (v.contains("path")) f.path = to_text(v.at("path"), path);
    if (v.contains("text")) f.text = to_text(v.at("text"), path);
    return f;
  }
  reject(path, v, "a file path, or {\"path\": ..., \"text\": ...}");
}

// A model: a catalog name or path, {"name_or_path": ..., "config": {...}}, or a config.json object itself.
ModelSource to_model(const json& v, std::string_view path) {
  if (v.is_string()) return ModelSource{v.get<std::string>(), std::nullopt};
  if (!v.is_object()) reject(path, v, "a catalog name, a config.json path, or a config.json object");
  ModelSource m;
  if (v.contains("config")) {
    const json& config = v.at("config");
    m.config = config.is_string() ? config.get<std::string>() : config.dump();
    if (v.contains("name_or_path")) m.name_or_path = to_text(v.at("name_or_path"), path);
    return m;
  }
  m.config = v.dump();
  const auto name = v.find("_name_or_path");  // transformers' PretrainedConfig.to_dict() names the model here
  m.name_or_path = name != v.end() && name->is_string() && !name->get<std::string>().empty() ? name->get<std::string>()
                                                                                            : "config";
  return m;
}

// `invert`: the value is a negated flag's (no_overheads: true sets hardware.overheads false).
void read_value(const Field& field, const json& v, bool invert) {
  const std::string_view path = field.info.path;
  std::visit(
      [&](auto* slot) {
        using T = std::remove_pointer_t<decltype(slot)>;
        if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::optional<std::int64_t>>)
          *slot = to_integer(v, path);
        else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::optional<double>>)
          *slot = to_number(v, path);
        else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::optional<std::string>>)
          *slot = to_text(v, path);
        else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::optional<bool>>)
          *slot = to_flag(v, path) != invert;
        else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>)
          *slot = to_list(v, path, to_integer);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          *slot = to_list(v, path, to_text);
        else if constexpr (std::is_same_v<T, std::optional<FileInput>>)
          *slot = to_file(v, path);
        else if constexpr (std::is_same_v<T, std::vector<FileInput>>)
          *slot = v.is_array() ? to_list(v, path, to_file) : std::vector<FileInput>{to_file(v, path)};
        else
          *slot = to_model(v, path);
      },
      field.slot);
}

ordered_json file_json(const FileInput& f) {
  if (!f.text) return f.path;
  ordered_json j;
  if (!f.path.empty()) j["path"] = f.path;
  j["text"] = *f.text;
  return j;
}

ordered_json model_json(const ModelSource& m) {
  if (!m.config) return m.name_or_path;
  ordered_json j;
  j["name_or_path"] = m.name_or_path;
  // A config read from a JSON object is kept as that object's dump, and is written back as the object. Any other
  // text (a pasted config with its own spacing, or not JSON at all) is written as the text, so the request reads
  // back to the same config: written as an object, "1 " would read back as "1".
  const json config = json::parse(*m.config, nullptr, false);
  const bool as_object = !config.is_discarded() && config.is_object() && config.dump() == *m.config;
  j["config"] = as_object ? ordered_json::parse(*m.config) : ordered_json(*m.config);
  return j;
}

}  // namespace

// The value of a field as JSON; null when it is not set.
ordered_json value_json(const Slot& slot) {
  return std::visit(
      [](auto* value) -> ordered_json {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::optional<FileInput>>) return *value ? file_json(**value) : ordered_json();
        else if constexpr (std::is_same_v<T, std::vector<FileInput>>) {
          ordered_json list = ordered_json::array();
          for (const auto& f : *value) list.push_back(file_json(f));
          return list;
        } else if constexpr (std::is_same_v<T, ModelSource>) {
          return value->given() ? model_json(*value) : ordered_json();
        } else if constexpr (requires { value->has_value(); }) {
          return *value ? ordered_json(**value) : ordered_json();
        } else {
          return ordered_json(*value);
        }
      },
      slot);
}

const Field* find_by_name(const FieldList& fields, std::string_view name) {
  for (const auto& f : fields.fields())
    if (f.info.name == name) return &f;
  return nullptr;
}

namespace {

// The field a path names: its positive option where a flag has both (tied_embeddings / untied_embeddings).
const Field* find_by_path(const FieldList& fields, std::string_view path) {
  const Field* found = nullptr;
  for (const auto& f : fields.fields())
    if (f.info.path == path && (found == nullptr || found->info.negated)) found = &f;
  return found;
}

bool is_prefix(const FieldList& fields, std::string_view prefix) {
  for (const auto& f : fields.fields())
    if (f.info.path.size() > prefix.size() && f.info.path.substr(0, prefix.size()) == prefix &&
        f.info.path[prefix.size()] == '.')
      return true;
  return false;
}

[[noreturn]] void unknown_key(const FieldList& fields, const std::string& key) {
  std::vector<std::string> names;
  for (const auto& f : fields.fields()) names.emplace_back(f.info.name);
  const std::string hint = did_you_mean(key, names);
  throw InputError(key, "unknown option" + (hint.empty() ? std::string() : " (" + hint + ")"),
                   "the options of this question (its --help, or gpuplan.options())");
}

// The keys of an object under `prefix` ("" at the top, where option names are accepted too).
void read_object(const FieldList& fields, const json& object, const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    if (value.is_null()) continue;  // not given (a Python None)
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (const Field* f = find_by_path(fields, path)) {
      read_value(*f, value, false);  // a path holds the field's own value, never a negated flag's
    } else if (value.is_object() && is_prefix(fields, path)) {
      read_object(fields, value, path);
    } else if (const Field* named = prefix.empty() ? find_by_name(fields, key) : nullptr) {
      read_value(*named, value, named->info.negated);
    } else {
      unknown_key(fields, path);
    }
  }
}

}  // namespace

// Every integer option is a count, read by the one count parser (parse_count: 4096, 1e6, 8K, 8Ki), from text or
// from a JSON number alike.
std::int64_t to_integer(const json& v, std::string_view path) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) return static_cast<std::int64_t>(parse_count(v.dump(), path));
  if (!v.is_string()) throw InputError(std::string(path), shown(v) + " is not a number", std::string(kCountsAccepted));
  return static_cast<std::int64_t>(parse_count(v.get_ref<const std::string&>(), path));
}

}  // namespace gpuplan::api::detail

namespace gpuplan::api {

bool Bounds::contains(double value) const {
  const bool above = minimum_open ? value > minimum : value >= minimum;
  const bool below = maximum_open ? value < maximum : value <= maximum;
  return above && below;
}

std::string Bounds::describe(bool integer) const {
  const std::string what = integer ? "an integer" : "a number";
  const bool low = std::isfinite(minimum), high = std::isfinite(maximum);
  if (low && high && !minimum_open && !maximum_open) return fmt::format("{} from {} to {}", what, minimum, maximum);
  std::string out = what;
  if (low) out += fmt::format(" {} {}", minimum_open ? ">" : ">=", minimum);
  if (low && high) out += " and";
  if (high) out += fmt::format(" {} {}", maximum_open ? "<" : "<=", maximum);
  return out;
}

}  // namespace gpuplan::api

namespace gpuplan::api::detail {

void FieldList::add(Slot slot, std::string_view name, std::string_view path, std::string_view help,
                    std::string_view group, std::string_view value) {
  const OptionKind kind = std::visit([](auto* p) { return KindOf<decltype(p)>::kind; }, slot);
  fields_.push_back(Field{OptionInfo{name, path, kind, value.empty() ? default_value_name(kind) : value, help, group,
                                     false, false, Bounds{}},
                          slot});
}

void FieldList::add(Slot slot, std::string_view name, std::string_view path, std::string_view help,
                    std::string_view group, Bounds bounds) {
  add(slot, name, path, help, group, std::string_view(), bounds);
}

void FieldList::add(Slot slot, std::string_view name, std::string_view path, std::string_view help,
                    std::string_view group, std::string_view value, Bounds bounds) {
  add(slot, name, path, help, group, value);
  fields_.back().info.bounds = bounds;
}

void FieldList::add_negated(bool* slot, std::string_view name, std::string_view path, std::string_view help,
                            std::string_view group) {
  fields_.push_back(Field{OptionInfo{name, path, OptionKind::flag, "", help, group, true, false, Bounds{}}, slot});
}

void FieldList::add_negated(std::optional<bool>* slot, std::string_view name, std::string_view path,
                            std::string_view help, std::string_view group) {
  fields_.push_back(Field{OptionInfo{name, path, OptionKind::flag, "", help, group, true, false, Bounds{}}, slot});
}

void FieldList::positional() { fields_.back().info.positional = true; }

namespace {

template <typename Number>
void check_value(const OptionInfo& info, Number value) {
  if (!info.bounds.contains(static_cast<double>(value)))
    throw InputError(std::string(info.path), fmt::format("{}", value),
                     info.bounds.describe(std::is_integral_v<Number>));
}

}  // namespace

void check_bounds(const FieldList& fields) {
  for (const auto& field : fields.fields()) {
    std::visit(
        [&](auto* slot) {
          using T = std::remove_pointer_t<decltype(slot)>;
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            check_value(field.info, *slot);
          } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>> ||
                               std::is_same_v<T, std::optional<double>>) {
            if (*slot) check_value(field.info, **slot);
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            for (auto value : *slot) check_value(field.info, value);
          }
        },
        field.slot);
  }
}

void read_fields(const FieldList& fields, const json& j) {
  if (!j.is_object()) throw InputError("request", j.dump(), "a JSON object of options");
  read_object(fields, j, "");
}

ordered_json write_fields(const FieldList& fields) {
  ordered_json out = ordered_json::object();
  for (const auto& f : fields.fields()) {
    if (find_by_path(fields, f.info.path) != &f) continue;  // each path once
    ordered_json value = value_json(f.slot);
    if (value.is_null()) continue;
    ordered_json* node = &out;
    std::string_view path = f.info.path;
    for (std::size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.')) {
      node = &(*node)[std::string(path.substr(0, dot))];
      path.remove_prefix(dot + 1);
    }
    (*node)[std::string(path)] = std::move(value);
  }
  return out;
}

}  // namespace gpuplan::api::detail
