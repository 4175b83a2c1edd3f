// Models named by the user: a catalog name, or a config.json (or a folder holding one) on disk.
#include <filesystem>

#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan {

ModelConfig load_model(std::string_view name_or_path) {
  const std::string text(name_or_path);
  std::error_code ec;
  std::filesystem::path path(text);
  if (std::filesystem::is_directory(path, ec)) path /= "config.json";
  if (std::filesystem::is_regular_file(path, ec)) {
    ModelConfig m = model_from_hf_config(read_text_file(path.string(), "model"), path.string());
    m.name = text;
    return m;
  }
  // Something that looks like a path but names nothing: say so rather than suggest catalog names.
  if (!is_catalog_model(text) && (text.find('/') != std::string::npos || path.extension() == ".json"))
    throw InputError("model", "\"" + text + "\": no such file or folder",
                     "a catalog name, a config.json or a folder holding one");
  return model_from_catalog(text);
}

}  // namespace gpuplan
