#pragma once
// The model options every command shares: which model (catalog name, config.json or a folder holding one) and
// flags that override single architecture fields. Commands register them with add_to() and call resolve().
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "gpuplan/model.hpp"

namespace gpuplan::cli {

struct ModelOptions {
  std::string model;                                 // --model NAME|PATH (or a command's positional argument)
  std::optional<std::int64_t> layers;
  std::optional<std::int64_t> hidden;
  std::optional<std::int64_t> heads;
  std::optional<std::int64_t> kv_heads;
  std::optional<std::int64_t> head_dim;
  std::optional<std::int64_t> ffn_hidden;
  std::optional<std::int64_t> vocab;
  std::optional<std::int64_t> max_positions;
  std::optional<std::string> mlp;                    // gelu | swiglu
  std::optional<std::string> norm;                   // layernorm | rmsnorm
  std::optional<bool> tied_embeddings;
  std::optional<std::int64_t> experts;
  std::optional<std::int64_t> top_k;
  std::optional<std::int64_t> expert_ffn_hidden;

  // Registers --model and the override flags on `cmd`. With positional_model, the model is also accepted as the
  // command's first positional argument (gpuplan model NAME). The flags write into this object when parsed, so it
  // must stay at the same address until then (hold it in a std::shared_ptr captured by the command's callback).
  void add_to(CLI::App& cmd, bool positional_model = false);
  bool has_model() const { return !model.empty(); }
  // Loads the model, applies the overrides and validates the result. Throws InputError.
  ModelConfig resolve() const;
};

}  // namespace gpuplan::cli
