#include "util/json_input.hpp"

#include <string>

#include "gpuplan/error.hpp"

namespace gpuplan::detail {

nlohmann::json parse_json_input(std::string_view text, std::string_view origin, std::string_view accepted) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& ex) {  // parse_error, and out_of_range for numbers such as 1e405
    // nlohmann's message carries line and column after its "[json.exception.parse_error.101] " tag.
    std::string what = ex.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw InputError(std::string(origin), "malformed JSON (" + what + ")", std::string(accepted));
  }
}

}  // namespace gpuplan::detail
