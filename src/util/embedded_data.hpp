#pragma once
// Access to the JSON catalogs under data/, compiled into the library at build time.
#include <string_view>
#include <vector>

namespace gpuplan::detail {

struct EmbeddedFile {
  std::string_view path;     // relative to data/, e.g. "models/llama.json"
  std::string_view content;
};

// Every embedded file, sorted by path.
const std::vector<EmbeddedFile>& embedded_files();

}  // namespace gpuplan::detail
