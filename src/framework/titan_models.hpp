// torchtitan's model flavours (torchtitan/models/*/__init__.py at v0.2.2) and the models they are.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "framework/launch.hpp"

namespace gpuplan::framework {

// Sets the model of `out` for [model] name and flavor: a catalog model, or the flavour's config; an issue when
// gpuplan does not know the flavour.
void read_titan_model(std::string_view name, std::string_view flavor, LaunchConfig& out);

struct TitanFlavor {
  std::string_view name;      // "llama3"
  std::string_view flavor;    // "8B"
};
// The flavour of a model: by its catalog name ("llama-3.1-8b"), or by its architecture (a model a launch file
// described); nothing when torchtitan has none.
std::optional<TitanFlavor> titan_flavor_of(std::string_view model_name, const ModelConfig& model);


}  // namespace gpuplan::framework
