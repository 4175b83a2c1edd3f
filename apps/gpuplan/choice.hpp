#pragma once
// Maps an option's text to one of a fixed set of values; anything else is an InputError listing the accepted names.
#include <initializer_list>
#include <string>
#include <utility>

#include "gpuplan/error.hpp"

namespace gpuplan::cli {

template <typename E>
E pick(const char* option, const std::string& value, std::initializer_list<std::pair<const char*, E>> choices) {
  std::string accepted;
  for (const auto& [name, e] : choices) {
    if (value == name) return e;
    accepted += (accepted.empty() ? "" : ", ") + std::string(name);
  }
  throw InputError(option, "'" + value + "'", accepted);
}

}  // namespace gpuplan::cli
