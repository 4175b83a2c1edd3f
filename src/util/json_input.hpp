#pragma once
// Parsing JSON that a user gave us: any failure is an InputError naming the file, with nlohmann's line/column.
#include <nlohmann/json.hpp>
#include <string_view>

namespace gpuplan::detail {

// Throws InputError(origin, "malformed JSON (...)", accepted) for syntax errors and out-of-range numbers.
nlohmann::json parse_json_input(std::string_view text, std::string_view origin, std::string_view accepted);

}  // namespace gpuplan::detail
