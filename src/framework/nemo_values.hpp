// NeMo 2.0 recipes as attribute paths and values ("trainer.strategy.tensor_model_parallel_size" = "4"): what a
// recipe sets by default, read from its Python source or from the built-in recipes, with the overrides of a
// `nemo llm pretrain` command line on top.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/model.hpp"

namespace gpuplan::framework {

struct NemoValue {
  std::string value;      // as written: "4", "True", "None", "torch.bfloat16", "bf16-mixed"
  std::string from;       // "llama3_8b.py:61" or "override trainer.num_nodes=4"
};
using NemoValues = std::map<std::string, NemoValue>;

// The defaults of a recipe file: trainer()'s parameters bound into the MegatronStrategy, DDP config and Trainer it
// builds, pretrain_recipe()'s num_nodes and num_gpus_per_node, the MockDataModule, the precision plugin, the
// optimizer and the model config class ("model.config").
NemoValues recipe_values_from_python(std::string_view path, std::string_view text);

// A built-in recipe's defaults by factory name (data/frameworks/nemo_recipes.json); nothing when unknown.
std::optional<NemoValues> builtin_recipe(std::string_view factory);
// The catalog model of a NeMo model config class ("Llama3Config8B" -> "llama-3.1-8b"); nothing when unknown.
std::optional<std::string> nemo_model_of(std::string_view config_class);
// The built-in factory whose model is this one ("llama-3.1-8b" -> "llama3_8b"), by catalog name or by
// architecture; nothing when no built-in recipe has it.
std::optional<std::string> nemo_factory_of(std::string_view model_name, const ModelConfig& model);

}  // namespace gpuplan::framework
