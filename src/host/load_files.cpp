// Reading the files a request names into it, field by field as the request describes them.
#include <filesystem>

#include "api/fields.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan::api {

namespace {

void load(FileInput& file, std::string_view field) {
  if (!file.text) file.text = read_text_file(file.path, field);
}

// A model named by a path: the config.json it names, or the one in the folder it names. Catalog names and
// paths that name nothing are left for the core to report.
void load(ModelSource& model) {
  if (model.config || model.name_or_path.empty() || is_catalog_model(model.name_or_path)) return;
  std::error_code ec;
  std::filesystem::path path(model.name_or_path);
  if (std::filesystem::is_directory(path, ec)) {
    path /= "config.json";
    if (!std::filesystem::is_regular_file(path, ec))
      throw InputError("model", "'" + model.name_or_path + "' (a folder without a config.json)",
                       "a catalog name, a config.json or a folder holding one");
  }
  if (std::filesystem::is_regular_file(path, ec)) model.config = read_text_file(path.string(), "model");
}

void load_fields(const detail::FieldList& fields) {
  for (const auto& field : fields.fields()) {
    const std::string_view path = field.info.path;
    std::visit(
        [&](auto* slot) {
          using T = std::remove_pointer_t<decltype(slot)>;
          if constexpr (std::is_same_v<T, std::optional<FileInput>>) {
            if (*slot) load(**slot, path);
          } else if constexpr (std::is_same_v<T, std::vector<FileInput>>) {
            for (auto& f : *slot) load(f, path);
          } else if constexpr (std::is_same_v<T, ModelSource>) {
            load(*slot);
          }
        },
        field.slot);
  }
}

}  // namespace

void load_files(ModelRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(MemoryRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(EstimateRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(PlanRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(CommRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(CalibrateRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(TopoRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(CatalogRequest& r) { load_fields(detail::fields_of(r)); }
void load_files(SizeRequest& r) { load_fields(detail::fields_of(r)); }

}  // namespace gpuplan::api
