// Compares a request filled from its launch file alone with the request as given, field by field.
#include "api/launch_beside.hpp"

#include <fmt/format.h>

namespace gpuplan::api::detail {

namespace {

// A value as the report prints it: text without quotes, a model by its name or path.
std::string shown(const nlohmann::ordered_json& value, bool negated) {
  if (value.is_null()) return "unset";
  if (value.is_boolean()) return value.get<bool>() != negated ? "true" : "false";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("name_or_path")) return value.at("name_or_path").get<std::string>();
  return value.dump();
}

// Whether the comparison looks at the field: an option the file set, or a model override applied to the model the
// file builds (the overrides change it field by field; an option that names the model replaces it whole).
bool compared(const Field& field, const nlohmann::json& file_options) {
  if (file_options.contains(std::string(field.info.name))) return true;
  return field.info.group == "Model overrides" && file_options.contains("model") && !field.info.negated;
}

}  // namespace

std::vector<std::string> changed_beside(const FieldList& file_only, const FieldList& given,
                                        const nlohmann::json& file_options) {
  std::vector<std::string> lines;
  const std::vector<Field>& before = file_only.fields();
  const std::vector<Field>& after = given.fields();
  for (std::size_t i = 0; i < before.size() && i < after.size(); ++i) {
    const Field& field = before[i];
    if (!compared(field, file_options)) continue;
    const nlohmann::ordered_json was = value_json(field.slot);
    const nlohmann::ordered_json now = value_json(after[i].slot);
    if (was == now) continue;
    const bool negated = field.info.negated;
    if (field.info.group == "Model overrides")
      lines.push_back(fmt::format("{} {}, applied to the model the file builds", field.info.name, shown(now, negated)));
    else
      lines.push_back(fmt::format("{} {} instead of the file's {}", field.info.name, shown(now, negated),
                                  shown(was, negated)));
  }
  return lines;
}

}  // namespace gpuplan::api::detail
