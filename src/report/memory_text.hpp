// The part of `gpuplan memory`'s text that `gpuplan estimate` prints too.
#pragma once

#include <string>

#include "gpuplan/api.hpp"

namespace gpuplan::api::detail {

// The cheapest single changes that make a job fit (or, when none does, the closest), one line each, at most
// `most` of them and a line saying how many more the JSON lists.
std::string suggestions_text(const MemoryResult& r, int most);

}  // namespace gpuplan::api::detail
