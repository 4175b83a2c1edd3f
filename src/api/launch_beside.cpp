// Compares a request filled from its launch file alone with the request as given, field by field, and finds the
// fields whose value is the file's.
#include "api/launch_beside.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gpuplan::api::detail {

namespace {

// A value as the report prints it: text without quotes, a model by its name or path.
std::string beside_text(const nlohmann::ordered_json& value, bool negated) {
  if (value.is_null()) return "unset";
  if (value.is_boolean()) return value.get<bool>() != negated ? "true" : "false";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("name_or_path")) return value.at("name_or_path").get<std::string>();
  return value.dump();
}

// Whether the comparison looks at the field: an option the file set, or a model override applied to the model the
// file builds (the overrides change it field by field; an option that names the model replaces it whole).
bool compared_beside(const Field& field, const nlohmann::json& file_options) {
  if (file_options.contains(std::string(field.info.name))) return true;
  return field.info.group == "Model overrides" && file_options.contains("model") && !field.info.negated;
}

// Whether the request as given holds a value for `path`: nested (`layout.gpus`), or flat under the name of any of
// the path's options (`gpus`; `no_dp_overlap` for time.dp_overlap).
bool gives_path(const FieldList& fields, const nlohmann::json& document, std::string_view path) {
  if (!document.is_object()) return false;
  for (const Field& f : fields.fields())
    if (f.info.path == path && document.contains(std::string(f.info.name))) return true;
  const nlohmann::json* node = &document;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    const auto next = node->find(std::string(path.substr(start, dot - start)));
    if (next == node->end()) return false;
    node = &*next;
    start = dot + 1;
    if (start <= path.size() && !node->is_object()) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> changed_beside(const FieldList& file_only, const FieldList& given,
                                        const nlohmann::json& file_options) {
  std::vector<std::string> lines;
  const std::vector<Field>& before = file_only.fields();
  const std::vector<Field>& after = given.fields();
  for (std::size_t i = 0; i < before.size() && i < after.size(); ++i) {
    const Field& field = before[i];
    if (!compared_beside(field, file_options)) continue;
    const nlohmann::ordered_json was = value_json(field.slot);
    const nlohmann::ordered_json now = value_json(after[i].slot);
    if (was == now) continue;
    const bool negated = field.info.negated;
    if (now.is_null())
      lines.push_back(fmt::format("{} from the options given beside it, not the file's {}", field.info.name,
                                  beside_text(was, negated)));
    else if (field.info.group == "Model overrides")
      lines.push_back(fmt::format("{} {}, applied to the model the file builds", field.info.name, beside_text(now, negated)));
    else
      lines.push_back(fmt::format("{} {} instead of the file's {}", field.info.name, beside_text(now, negated),
                                  beside_text(was, negated)));
  }
  return lines;
}

bool release_file_gpus(const FieldList& fields, const nlohmann::json& file_options, const nlohmann::json& document) {
  if (!file_options.contains("gpus")) return false;
  const Field* nodes = find_by_name(fields, "nodes");
  const Field* gpus = find_by_name(fields, "gpus");
  if (nodes == nullptr || gpus == nullptr || !gives_path(fields, document, nodes->info.path) ||
      gives_path(fields, document, gpus->info.path))
    return false;
  auto* const* count = std::get_if<std::optional<std::int64_t>*>(&gpus->slot);
  if (count == nullptr) return false;
  (*count)->reset();
  return true;
}

std::vector<std::string> file_fields(const FieldList& fields, const nlohmann::json& file_options,
                                     const nlohmann::json& document) {
  std::vector<std::string> paths;
  for (const Field& f : fields.fields()) {
    if (!file_options.contains(std::string(f.info.name)) || gives_path(fields, document, f.info.path)) continue;
    if (value_json(f.slot).is_null()) continue;   // cleared: no longer the file's (release_file_gpus)
    if (std::find(paths.begin(), paths.end(), f.info.path) == paths.end()) paths.emplace_back(f.info.path);
  }
  return paths;
}

}  // namespace gpuplan::api::detail
