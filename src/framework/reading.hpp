// What the launch-configuration readers share: recording each option they take, and the option lists of the
// frameworks (data/frameworks/, extracted from each framework's source).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "framework/launch.hpp"

namespace gpuplan::framework {

// Sets `group[option] = value` and notes where it came from: "line 52: --tensor-model-parallel-size 8 -> tp 8".
void take(LaunchConfig& config, nlohmann::json& group, std::string_view option, const nlohmann::json& value,
          std::string_view from);
// Megatron-Core's attention_backend as gpuplan's layout: unfused and local as eager attention; flash, fused and auto
// as flash attention with that backend; the enum's own spelling ("AttnBackend.flash") as its name. `backend` is
// empty for a value outside those (eager or flash unknown, priced as flash with auto).
struct MegatronAttention {
  std::string_view attention;   // eager | flash
  std::string_view backend;     // auto | fused | flash, or empty
};
MegatronAttention megatron_attention(std::string_view value);
// Takes Megatron-Core's attention_backend (--attention-backend, NeMo's model.config.attention_backend) into the
// layout; a value outside its choices is listed as not understood.
void take_attention_backend(LaunchConfig& config, std::string_view backend, std::string_view from);
// Takes Megatron-Core's moe_token_dispatcher_type (alltoall, flex) into the training setup; allgather and older
// values are priced as alltoall and listed as not understood.
void take_moe_dispatcher(LaunchConfig& config, std::string_view dispatcher, std::string_view from);
// The value as the notes print it: 8, bf16, true.
std::string value_text(const nlohmann::json& value);
// Whether a count read from a file is one the arithmetic on it can take (degrees, batches, GPUs): the readers
// leave anything else to the request's own checks instead of multiplying or dividing by it.
inline bool sane_count(std::int64_t value, std::int64_t most = 1'000'000'000) { return value >= 1 && value <= most; }

// A whole number from text ("8", "-1", "5e8" when it is whole); nothing for anything else.
std::optional<std::int64_t> whole_number(std::string_view text);

// Whether two models are the same architecture: the same shape and exactly the same parameters (a model a launch
// file describes, and the catalog model a framework names).
bool same_architecture(const ModelConfig& a, const ModelConfig& b);

// One flag of Megatron-LM's pretrain_gpt.py parser.
struct MegatronFlag {
  std::string dest;                    // "tensor_model_parallel_size"
  enum class Kind { flag, value, list } kind = Kind::value;
  std::string type;                    // int, float, str, bool, list
  std::vector<std::string> choices;    // empty: any value of the type
  bool sets = true;                    // store_true (true) or store_false (false) for flags
  bool relevant = false;               // matters for memory, layout or step time (megatron.json's subset)
};
const MegatronFlag* megatron_flag(std::string_view name);   // nullptr: the parser rejects it
const std::vector<std::string>& megatron_flag_names();
std::string_view megatron_flags_source();

// DeepSpeed's ds_config keys: top level, and the strict (pydantic) sections that reject unknown keys.
bool deepspeed_top_level_key(std::string_view key);
// The known keys of a strict section ("zero_optimization"); nullptr when the section is not strict.
const std::vector<std::string>* deepspeed_strict_section(std::string_view section);

// torchtitan v0.2.2's TOML keys ("parallelism.tensor_parallel_degree") with their declared type; nullptr: unknown.
const std::string* torchtitan_key_type(std::string_view dotted);
std::vector<std::string> torchtitan_keys();

// NeMo 2.0 recipe attribute paths gpuplan knows ("trainer.strategy.tensor_model_parallel_size").
const std::string* nemo_key_type(std::string_view dotted);

}  // namespace gpuplan::framework
