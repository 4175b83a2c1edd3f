#pragma once
// Helpers for catalog names: closest-match suggestions for unknown names.
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan {

// Edit distance between two strings, ignoring case.
std::size_t edit_distance(std::string_view a, std::string_view b);

// Up to `limit` candidates closest to `name` (substring matches first, then by edit distance).
std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t limit = 3);

// "did you mean a, b or c?" or "" when there are no candidates.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace gpuplan
