// What the options given beside a launch file (`from`) changed of the file's settings, said in the file's report so
// that a reader sees which of the file's values the estimate did not use.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/fields.hpp"

namespace gpuplan::api::detail {

// One line per option whose value differs between `file_only` (the request filled from the file's options alone)
// and `given` (the same with the options given beside it): the file's options by name, and the model overrides
// when the file builds the model. "seq_len 4096 instead of the file's 512",
// "vocab 32000, applied to the model the file builds".
std::vector<std::string> changed_beside(const FieldList& file_only, const FieldList& given,
                                        const nlohmann::json& file_options);

// The same for a whole request; empty when it has no launch file.
template <typename Request>
std::vector<std::string> changed_beside(const nlohmann::json& file_options, Request& given) {
  if (file_options.empty()) return {};
  Request file_only;
  const FieldList file_fields = fields_of(file_only);
  read_fields(file_fields, file_options);
  return changed_beside(file_fields, fields_of(given), file_options);
}

}  // namespace gpuplan::api::detail
