#pragma once
// Where models come from: Hugging Face config.json text, and the built-in catalog (data/models/*.json).
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/model.hpp"

namespace gpuplan {

// Parses the text of a Hugging Face config.json. Class defaults apply where a key is absent. Throws InputError
// naming the field for an unknown model_type, a missing required field or a malformed file. `origin` names the
// file in messages.
ModelConfig model_from_hf_config(std::string_view json_text, std::string_view origin);

// Names in the built-in catalog, sorted ("gpt3-175b", "llama-3.1-70b", ...).
std::vector<std::string> model_catalog_names();

// A catalog entry by name; throws InputError with the closest names suggested.
ModelConfig model_from_catalog(std::string_view name);

// Whether the built-in catalog has a model of this name.
bool is_catalog_model(std::string_view name);

}  // namespace gpuplan
