#pragma once
// gpuplan's release: what --version prints and what every launch file gpuplan writes names.
#include <string_view>

namespace gpuplan {

inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace gpuplan
