// A DeepSpeed ds_config.json read into request options. DeepSpeed owns data parallelism, ZeRO, offload, precision
// and the batch; tensor and pipeline parallelism come from AutoTP (tensor_parallel.autotp_size) and the pipeline
// engine (pipeline.stages) when the config names them, otherwise from the training script (give --tp, --pp).
// Key meanings and rules: deepspeed/runtime/config.py, zero/config.py, zero/offload_config.py at the commit of
// data/frameworks/deepspeed_keys.json.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "framework/reading.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan::framework {

namespace {

using nlohmann::json;

std::string at_line(std::string_view path, std::string_view text, std::size_t byte) {
  const std::size_t end = std::min(byte, text.size());
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
  return fmt::format("{}:{}", path, line);
}

json parse(std::string_view path, std::string_view text) {
  try {
    return json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw InputError(at_line(path, text, e.byte), "not JSON (" + std::string(e.what()).substr(0, 120) + ")",
                     "a ds_config.json object");
  } catch (const json::exception& e) {   // out_of_range: a number such as 5e7999 that no double holds
    throw InputError(std::string(path), "not JSON (" + std::string(e.what()).substr(0, 120) + ")",
                     "a ds_config.json object with numbers a double holds");
  }
}

// A value in the config; "auto" (the Hugging Face Trainer's placeholder) counts as unset, as DeepSpeed treats it.
const json* find(const json& config, std::string_view dotted) {
  const json* node = &config;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const std::size_t dot = std::min(dotted.find('.', start), dotted.size());
    const std::string key(dotted.substr(start, dot - start));
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &node->at(key);
    start = dot + 1;
  }
  if (node->is_null() || (node->is_string() && node->get<std::string>() == "auto")) return nullptr;
  return node;
}

// A whole number as JSON may write it: 8, 8.0 or "8".
std::optional<std::int64_t> whole_value(const json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) return whole_number(fmt::format("{}", v.get<double>()));
  if (v.is_string()) return whole_number(v.get<std::string>());
  return std::nullopt;
}

std::optional<std::int64_t> integer(const json& config, std::string_view dotted) {
  const json* v = find(config, dotted);
  return v == nullptr ? std::nullopt : whole_value(*v);
}

bool enabled(const json& config, std::string_view section) {
  const json* v = find(config, std::string(section) + ".enabled");
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::string device(const json& config, std::string_view dotted) {
  const json* v = find(config, dotted);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "none";
}

// Unknown keys: the strict sections reject them (extra=forbid), the top level ignores them.
void check_keys(const json& config, LaunchConfig& out) {
  for (const auto& [key, value] : config.items()) {
    if (!deepspeed_top_level_key(key)) {
      out.not_understood.push_back(fmt::format("{}: not a DeepSpeed key (ignored by DeepSpeed)", key));
      continue;
    }
    const auto check = [&out](const std::string& section, const json& object) {
      const std::vector<std::string>* known = deepspeed_strict_section(section);
      if (known == nullptr || !object.is_object()) return;
      for (const auto& [field, unused] : object.items()) {
        if (std::find(known->begin(), known->end(), field) != known->end()) continue;
        const std::string hint = did_you_mean(field, *known);
        out.errors.push_back(fmt::format("{}.{} is not a field of DeepSpeed's {} section{}, which rejects unknown "
                                         "keys (deepspeed/runtime/config_utils.py:104-112)",
                                         section, field, section, hint.empty() ? "" : " (" + hint + ")"));
      }
    };
    check(key, value);
    if (value.is_object())
      for (const auto& [sub, object] : value.items()) check(key + "." + sub, object);
  }
}

// The counts gpuplan reads: one that is not a whole number (1.5, true, "eight") is an error, not a silent default.
void check_counts(const json& config, LaunchConfig& out) {
  static constexpr std::string_view kCounts[] = {
      "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "zero_optimization.stage",
      "tensor_parallel.autotp_size", "pipeline.stages", "pipeline.activation_checkpoint_interval",
      "expert_parallel.autoep_size", "expert_parallel.expert_tensor_parallel_size",
      "activation_checkpointing.number_checkpoints", "sequence_parallel_size", "zero_optimization.reduce_bucket_size",
      "zero_optimization.allgather_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
      "zero_optimization.prefetch_bucket_size", "zero_optimization.stage3_max_live_parameters",
      "zero_optimization.max_live_parameters"};
  for (const std::string_view key : kCounts)
    if (const json* v = find(config, key); v != nullptr && !whole_value(*v))
      out.errors.push_back(fmt::format("{} is {}; it must be a whole number", key, v->dump()));
}

void read_batch(const json& config, LaunchConfig& out) {
  const auto total = integer(config, "train_batch_size");
  const auto micro = integer(config, "train_micro_batch_size_per_gpu");
  const auto accumulation = integer(config, "gradient_accumulation_steps");
  if (!total && !micro) {
    out.issues.push_back("neither train_batch_size nor train_micro_batch_size_per_gpu is set: DeepSpeedConfig "
                         "requires one of them (deepspeed/runtime/config.py:942-987)");
    return;
  }
  if (micro) take(out, out.training, "micro_batch", *micro, "train_micro_batch_size_per_gpu");
  if (total) take(out, out.training, "global_batch", *total, "train_batch_size");
  if (total && micro && accumulation && sane_count(*micro) && sane_count(*accumulation)) {
    const std::int64_t per_replica = *micro * *accumulation;
    if (per_replica <= 0 || *total % per_replica != 0)
      out.issues.push_back(fmt::format("train_batch_size {} is not train_micro_batch_size_per_gpu {} x "
                                       "gradient_accumulation_steps {} x data-parallel size "
                                       "(deepspeed/runtime/config.py:925-940)",
                                       *total, *micro, *accumulation));
    else
      take(out, out.layout, "dp", *total / per_replica, "train_batch_size / (micro x gradient_accumulation_steps)");
  } else if (total && !micro) {
    out.not_understood.push_back("train_micro_batch_size_per_gpu follows from train_batch_size and the "
                                 "data-parallel size; give --micro-batch");
  } else if (micro && accumulation && !total) {
    out.understood.push_back(fmt::format("gradient_accumulation_steps {} -> global batch = {} x {} x dp",
                                         *accumulation, *micro, *accumulation));
  }
}

void read_zero(const json& config, LaunchConfig& out) {
  const auto stage = integer(config, "zero_optimization.stage").value_or(0);
  if (stage < 0 || stage > 3)
    out.errors.push_back(fmt::format("zero_optimization.stage {} is not 0, 1, 2 or 3", stage));
  take(out, out.layout, "zero", stage, "zero_optimization.stage");
  std::string optimizer = device(config, "zero_optimization.offload_optimizer.device");
  std::string params = device(config, "zero_optimization.offload_param.device");
  const json* legacy = find(config, "zero_optimization.cpu_offload");
  if (legacy != nullptr && legacy->is_boolean() && legacy->get<bool>()) {
    if (optimizer != "none")
      out.errors.push_back("zero_optimization.cpu_offload together with its replacement offload_optimizer "
                           "(deepspeed/runtime/config_utils.py:59-99)");
    optimizer = "cpu";
    out.understood.push_back("zero_optimization.cpu_offload true is DeepSpeed's older name of offload_optimizer cpu");
  }
  const json* legacy_param = find(config, "zero_optimization.cpu_offload_param");
  if (legacy_param != nullptr && legacy_param->is_boolean() && legacy_param->get<bool>()) params = "cpu";
  if (params != "none" && stage != 3)
    out.issues.push_back(fmt::format("offload_param is used by ZeRO stage 3 only; stage {} ignores it "
                                     "(deepspeed/runtime/zero/offload_config.py:22)", stage));
  const bool with_params = params != "none" && stage == 3;
  if (optimizer != "none" || with_params) {
    take(out, out.layout, "offload", with_params ? "optimizer+params" : "optimizer", "zero_optimization.offload_*");
    take(out, out.layout, "offload_target", optimizer == "nvme" || params == "nvme" ? "nvme" : "cpu",
         "zero_optimization.offload_*.device");
  }
  const json* ratio = find(config, "zero_optimization.offload_optimizer.ratio");
  if (ratio != nullptr && ratio->is_number() && ratio->get<double>() < 1.0) {
    if (stage != 3) out.issues.push_back("offload_optimizer.ratio < 1 requires ZeRO stage 3 (zero/config.py:388-393)");
    out.not_understood.push_back("zero_optimization.offload_optimizer.ratio (partial offload is not modelled)");
  }
  const json* overlap = find(config, "zero_optimization.overlap_comm");
  const bool overlapped = overlap != nullptr && overlap->is_boolean() ? overlap->get<bool>() : stage == 3;
  if (!overlapped)
    take(out, out.timing, "no_dp_overlap", true,
         overlap != nullptr ? "zero_optimization.overlap_comm false"
                            : "zero_optimization.overlap_comm unset (off below stage 3, zero/config.py:382-386)");
}

// The ZeRO buffer sizes the memory and time models use. DeepSpeed accepts the stage3_ keys under their plain names
// too (populate_by_name, zero/config.py). A size of 0, which DeepSpeed allows, is listed as not understood:
// gpuplan prices buckets of one element at least.
void read_zero_buffers(const json& config, LaunchConfig& out) {
  static constexpr std::array<std::array<std::string_view, 3>, 4> kSizes = {{
      {"reduce_bucket_size", "reduce_bucket_size", "reduce_bucket_size"},
      {"allgather_bucket_size", "allgather_bucket_size", "allgather_bucket_size"},
      {"stage3_prefetch_bucket_size", "prefetch_bucket_size", "stage3_prefetch_bucket_size"},
      {"stage3_max_live_parameters", "max_live_parameters", "stage3_max_live_parameters"}}};
  for (const auto& [key, alias, option] : kSizes) {
    std::string dotted = "zero_optimization." + std::string(key);
    std::optional<std::int64_t> size = integer(config, dotted);
    if (!size && alias != key) {
      dotted = "zero_optimization." + std::string(alias);
      size = integer(config, dotted);
    }
    if (!size) continue;
    if (*size < 1)
      out.not_understood.push_back(
          fmt::format("{} {} (gpuplan prices buckets of 1 element or more; DeepSpeed's default is used)", dotted, *size));
    else
      take(out, out.training, option, *size, dotted);
  }
}

void read_precision(const json& config, LaunchConfig& out) {
  const bool fp16 = enabled(config, "fp16");
  const bool bf16 = enabled(config, "bf16") || enabled(config, "bfloat16");
  // fp16 wins when both are on (deepspeed/runtime/engine.py:1485-1496).
  take(out, out.training, "precision", fp16 ? "fp16" : bf16 ? "bf16" : "fp32", fp16 ? "fp16.enabled" : bf16 ? "bf16.enabled" : "no fp16/bf16 section");
  const json* accumulate = find(config, "data_types.grad_accum_dtype");
  if (accumulate != nullptr && accumulate->is_string())
    take(out, out.training, "grad_dtype", accumulate->get<std::string>(), "data_types.grad_accum_dtype");
  const json* optimizer = find(config, "optimizer.type");
  if (optimizer == nullptr || !optimizer->is_string()) return;
  std::string name = optimizer->get<std::string>();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "adam" || name == "adamw" || name == "sgd") take(out, out.training, "optimizer", name, "optimizer.type");
  else out.not_understood.push_back("optimizer.type " + optimizer->get<std::string>() + " (gpuplan models Adam, AdamW and SGD states)");
}

void read_parallelism(const json& config, LaunchConfig& out) {
  if (const auto tp = integer(config, "tensor_parallel.autotp_size"); tp && *tp > 0)
    take(out, out.layout, "tp", *tp, "tensor_parallel.autotp_size");
  if (const auto pp = integer(config, "pipeline.stages"); pp && *pp > 0) take(out, out.layout, "pp", *pp, "pipeline.stages");
  if (enabled(config, "expert_parallel")) {
    take(out, out.layout, "ep", integer(config, "expert_parallel.autoep_size").value_or(1), "expert_parallel.autoep_size");
    take(out, out.layout, "etp", integer(config, "expert_parallel.expert_tensor_parallel_size").value_or(1),
         "expert_parallel.expert_tensor_parallel_size");
  }
  if (integer(config, "pipeline.activation_checkpoint_interval").value_or(0) > 0)
    take(out, out.layout, "recompute", "full", "pipeline.activation_checkpoint_interval");
  // The section is what deepspeed.checkpointing recomputes whole layers with; number_checkpoints, when given,
  // counts the layers of each stage it covers.
  if (find(config, "activation_checkpointing") != nullptr) {
    take(out, out.layout, "recompute", "full", "activation_checkpointing");
    if (const auto layers = integer(config, "activation_checkpointing.number_checkpoints"))
      take(out, out.layout, "recompute_layers", *layers, "activation_checkpointing.number_checkpoints");
  }
  if (const json* overlap = find(config, "tensor_parallel.tp_overlap_comm"); overlap != nullptr && overlap->is_boolean() && overlap->get<bool>())
    take(out, out.timing, "tp_overlap", true, "tensor_parallel.tp_overlap_comm");
  if (integer(config, "sequence_parallel_size").value_or(1) > 1)
    out.not_understood.push_back("sequence_parallel_size (Ulysses sequence parallelism is not modelled)");
}

// A JSON object none of whose keys DeepSpeed knows is another file (DeepSpeed itself would stop at its batch size):
// most often a model's config.json given to --from instead of --model.
void refuse_foreign_json(std::string_view path, const json& config) {
  for (const auto& item : config.items())
    if (deepspeed_top_level_key(item.key())) return;
  const bool hugging_face = config.contains("model_type") || config.contains("architectures");
  throw InputError(std::string(path),
                   hugging_face ? "a Hugging Face model config (model_type, architectures), not a launch config"
                                : "a JSON object without any DeepSpeed key",
                   hugging_face ? "the model's config.json as --model, a ds_config.json as --from"
                                : "a ds_config.json (train_batch_size or train_micro_batch_size_per_gpu, "
                                  "zero_optimization, bf16, ...)");
}

}  // namespace

LaunchConfig read_deepspeed_config(std::string_view path, std::string_view text) {
  const json config = parse(path, text);
  if (!config.is_object())
    throw InputError(std::string(path), std::string("a JSON ") + config.type_name(), "a ds_config.json object");
  refuse_foreign_json(path, config);
  LaunchConfig out;
  out.framework = Framework::deepspeed;
  out.format = "DeepSpeed ds_config.json";
  out.training["framework"] = "deepspeed";
  check_keys(config, out);
  check_counts(config, out);
  read_batch(config, out);
  read_zero(config, out);
  read_zero_buffers(config, out);
  read_precision(config, out);
  read_parallelism(config, out);
  out.not_understood.push_back("the model and the sequence length: the training script sets them; give --model and "
                               "--seq-len");
  return out;
}

}  // namespace gpuplan::framework
