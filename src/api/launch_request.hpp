// The settings of a request's launch file (`from`) as request options.
#pragma once

#include <nlohmann/json.hpp>

#include "gpuplan/api.hpp"

namespace gpuplan::api::detail {

// Flat options for `question` from the file named by the request's `from` (flat or nested), when its text is in the
// request; empty JSON when there is none. InputError for a file no reader accepts, or one that names no model when
// the request names none either.
nlohmann::json launch_options(Question question, const nlohmann::json& request);

}  // namespace gpuplan::api::detail
