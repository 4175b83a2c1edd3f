// A TOML file as flat dotted keys ("parallelism.tensor_parallel_degree") with their values and lines, read with
// toml++ (Debian's libtomlplusplus-dev). Only what the torchtitan reader needs: scalars and arrays of strings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan::framework {

struct TomlValue {
  std::optional<std::int64_t> integer;
  std::optional<double> number;        // floats, and integers too
  std::optional<bool> boolean;
  std::optional<std::string> text;
  std::vector<std::string> list;       // an array's string items
  int line = 0;
};

struct TomlDocument {
  std::map<std::string, TomlValue> values;
  std::vector<std::string> comments;   // the text after each '#' outside strings, for hints such as a GPU count
};

// InputError "path:line" with toml++'s description for text that is not TOML.
TomlDocument read_toml(std::string_view path, std::string_view text);

}  // namespace gpuplan::framework
