#pragma once
// Typed access to the keys of one Hugging Face config.json, with errors that name the file and the key.
// A key set to null counts as absent, as in transformers, where null means "use the class default".
#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/model.hpp"

namespace gpuplan::detail {

class HfConfigReader {
 public:
  HfConfigReader(const nlohmann::json& json, std::string origin) : json_(json), origin_(std::move(origin)) {}

  // The first of `keys` present (several names exist for one field, e.g. n_embd / hidden_size).
  std::optional<std::int64_t> find_int(std::initializer_list<const char*> keys) const;
  std::int64_t integer(std::initializer_list<const char*> keys) const;                       // required
  std::int64_t integer(std::initializer_list<const char*> keys, std::int64_t fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  std::vector<std::int64_t> int_list(const char* key) const;                                  // [] when absent
  bool has(const char* key) const;
  bool is_null(const char* key) const;  // present and set to null

  // "config.json: hidden_size"
  std::string field(const char* key) const { return origin_ + ": " + key; }
  const std::string& origin() const { return origin_; }

 private:
  const nlohmann::json* get(const char* key) const;
  const nlohmann::json& json_;
  std::string origin_;
};

// Fills `m` for one family of model types; `type` is the model_type as written in the file.
void read_gpt2(const HfConfigReader& r, ModelConfig& m);
void read_gpt_neox(const HfConfigReader& r, ModelConfig& m);
void read_falcon(const HfConfigReader& r, const std::string& type, ModelConfig& m);
void read_bloom(const HfConfigReader& r, ModelConfig& m);
void read_opt(const HfConfigReader& r, ModelConfig& m);
void read_llama_like(const HfConfigReader& r, const std::string& type, ModelConfig& m);
void read_deepseek(const HfConfigReader& r, const std::string& type, ModelConfig& m);
// Megatron-LM's argument names (model_type "megatron"), as the launch-script reader writes them.
void read_megatron_args(const HfConfigReader& r, ModelConfig& m);

}  // namespace gpuplan::detail
