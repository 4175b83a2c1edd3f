// A launch file (`from`) and the options given beside it: which of the file's settings the options changed (said
// in the file's report, so that a reader sees which of its values were not used), and which values are the file's
// (an error about one of them says the file set it).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/fields.hpp"
#include "gpuplan/error.hpp"

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
  const FieldList file_only_fields = fields_of(file_only);
  read_fields(file_only_fields, file_options);
  return changed_beside(file_only_fields, fields_of(given), file_options);
}

// A node count given beside a file that launches its own (trainer.num_nodes x trainer.devices, torchrun --nnodes x
// --nproc_per_node) replaces the file's node count: the GPUs are then those of the nodes asked for, not the file's
// count. Clears the request's `gpus` (unless given beside the file too); true when it did.
bool release_file_gpus(const FieldList& fields, const nlohmann::json& file_options, const nlohmann::json& document);

// The paths of the fields `file_options` sets that `document` (the request as given) does not give, flat or nested,
// and that still hold a value.
std::vector<std::string> file_fields(const FieldList& fields, const nlohmann::json& file_options,
                                     const nlohmann::json& document);

// `body()`, with an InputError about a field the launch file set (launch.file_fields) saying so: the value came
// from the file, not from an option the user typed.
template <typename Body>
auto naming_launch_file(const LaunchOptions& launch, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const InputError& e) {
    if (!launch.from || std::find(launch.file_fields.begin(), launch.file_fields.end(), e.field()) ==
                            launch.file_fields.end())
      throw;
    const std::string file = launch.from->path.empty() ? std::string("the launch file") : launch.from->path;
    throw InputError(e.field(), e.given() + ", as " + file + " sets it", e.accepted());
  }
}

}  // namespace gpuplan::api::detail
