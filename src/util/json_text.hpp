// JSON text from values built out of bytes the user gave (file names, file contents): bytes that are not UTF-8,
// which JSON text must be, are written as U+FFFD instead of failing the whole answer.
#pragma once

#include <string>

namespace gpuplan::detail {

template <class Json>
std::string json_text(const Json& json, int indent = -1) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpuplan::detail
