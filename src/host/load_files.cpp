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

nlohmann::json with_launch_file(const nlohmann::json& request) {
  if (!request.is_object()) return request;
  nlohmann::json out = request;
  nlohmann::json* from = nullptr;
  if (out.contains("from")) from = &out["from"];
  else if (out.contains("launch") && out["launch"].is_object() && out["launch"].contains("from")) from = &out["launch"]["from"];
  if (from == nullptr) return out;
  if (from->is_string()) {
    const std::string path = from->get<std::string>();
    *from = {{"path", path}, {"text", read_text_file(path, "launch.from")}};
  } else if (from->is_object() && from->contains("path") && !from->contains("text") && (*from)["path"].is_string()) {
    (*from)["text"] = read_text_file((*from)["path"].get<std::string>(), "launch.from");
  }
  return out;
}

std::vector<std::string> write_launch_files(const std::vector<LaunchFileReport>& files, const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw InputError("launch.out", "'" + folder + "' (" + ec.message() + ")", "a folder that can be created");
  std::vector<std::string> written;
  for (const LaunchFileReport& file : files) {
    const std::string path = (std::filesystem::path(folder) / file.name).string();
    write_text_file(path, file.text, "launch.out");
    if (file.name.size() > 3 && file.name.compare(file.name.size() - 3, 3, ".sh") == 0)
      std::filesystem::permissions(path, std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec,
                                   std::filesystem::perm_options::add, ec);
    written.push_back(path);
  }
  return written;
}

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
