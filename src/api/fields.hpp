// The fields of the requests, described once: each field's option name, JSON path, help and where it lives in the
// request. The option tables, JSON reading and writing, and the host's file loading all walk these descriptions,
// so a new option needs one line here and nothing in the front ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpuplan/api.hpp"

namespace gpuplan::api::detail {

// Where a field's value lives.
using Slot = std::variant<std::int64_t*, std::optional<std::int64_t>*, double*, std::optional<double>*, std::string*,
                          std::optional<std::string>*, bool*, std::optional<bool>*, std::vector<std::int64_t>*,
                          std::vector<std::string>*, std::optional<FileInput>*, std::vector<FileInput>*, ModelSource*>;

struct Field {
  OptionInfo info;
  Slot slot;
};

class FieldList {
 public:
  // A field; its kind follows from where it lives. `value` names what to type ("INT", "SIZE", ...).
  void add(Slot slot, std::string_view name, std::string_view path, std::string_view help, std::string_view group,
           std::string_view value = {});
  // A number or integer field with the values it accepts.
  void add(Slot slot, std::string_view name, std::string_view path, std::string_view help, std::string_view group,
           Bounds bounds);
  void add(Slot slot, std::string_view name, std::string_view path, std::string_view help, std::string_view group,
           std::string_view value, Bounds bounds);
  // A flag that sets `*slot` false ("no_overheads").
  void add_negated(bool* slot, std::string_view name, std::string_view path, std::string_view help,
                   std::string_view group);
  // The same, for a field that is unset until a flag sets it either way ("untied_embeddings").
  void add_negated(std::optional<bool>* slot, std::string_view name, std::string_view path, std::string_view help,
                   std::string_view group);
  // Marks the last field added as one the command line also takes without its flag.
  void positional();
  const std::vector<Field>& fields() const { return fields_; }

 private:
  std::vector<Field> fields_;
};

// The fields of each request, pointing into it.
FieldList fields_of(ModelRequest& request);
FieldList fields_of(MemoryRequest& request);
FieldList fields_of(EstimateRequest& request);
FieldList fields_of(PlanRequest& request);
FieldList fields_of(CommRequest& request);
FieldList fields_of(CalibrateRequest& request);
FieldList fields_of(TopoRequest& request);
FieldList fields_of(CatalogRequest& request);
FieldList fields_of(SizeRequest& request);

// Reads nested or flat JSON into the fields; throws InputError naming the field (or the unknown key).
void read_fields(const FieldList& fields, const nlohmann::json& json);
// Checks every number of the request against its option's bounds (the one rule of each option, whatever front
// end filled it); throws InputError naming the field and the values accepted.
void check_bounds(const FieldList& fields);
template <typename Request>
void check_bounds(const Request& request) {
  check_bounds(fields_of(const_cast<Request&>(request)));  // only read through the fields
}

// An integer option's value, from a JSON number or from text as the command line gives it (parse_count: 4096, 1e6,
// 8K, 8Ki); throws InputError naming `path`.
std::int64_t to_integer(const nlohmann::json& value, std::string_view path);

// The field of an option name ("gpus"); nullptr when the request has none.
const Field* find_by_name(const FieldList& fields, std::string_view name);

// A field's value as JSON (null when not set), as write_fields writes it.
nlohmann::ordered_json value_json(const Slot& slot);

// Writes every field that is set, nested by path.
nlohmann::ordered_json write_fields(const FieldList& fields);

}  // namespace gpuplan::api::detail
