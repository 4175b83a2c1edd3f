// A torchtitan TOML job file (v0.2.2, the last release with TOML jobs) read into request options. The keys and
// their meaning follow torchtitan/config/job_config.py; the parallel degrees torchtitan/distributed/parallel_dims.py.
// The world size is not in the file (torchrun sets it); a comment stating the intended GPUs is taken as a hint.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "framework/reading.hpp"
#include "framework/titan_layer_ac.hpp"
#include "framework/titan_models.hpp"
#include "framework/toml_document.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan::framework {

namespace {

using Values = std::map<std::string, TomlValue>;

std::optional<std::int64_t> integer(const Values& values, const std::string& key) {
  const auto found = values.find(key);
  if (found == values.end() || !found->second.integer) return std::nullopt;
  return found->second.integer;
}

std::optional<std::string> text(const Values& values, const std::string& key) {
  const auto found = values.find(key);
  if (found == values.end() || !found->second.text) return std::nullopt;
  return found->second.text;
}

std::optional<bool> boolean(const Values& values, const std::string& key) {
  const auto found = values.find(key);
  if (found == values.end() || !found->second.boolean) return std::nullopt;
  return found->second.boolean;
}

std::string where(const Values& values, const std::string& key) {
  const auto found = values.find(key);
  return found == values.end() ? key : fmt::format("line {}: {}", found->second.line, key);
}

// What a key of this declared type accepts, when `value` is not that; empty when it is (or the type is one gpuplan
// does not check: strings, literals and lists).
std::string mismatch(const std::string& type, const TomlValue& value) {
  if ((type == "int" || type == "int | None") && !value.integer) return "a whole number (int)";
  if (type == "bool" && !value.boolean) return "true or false (bool)";
  if (type.starts_with("float") && !value.number) return "a number (" + type + ")";
  return "";
}

std::string shown(const TomlValue& value) {
  if (value.integer) return std::to_string(*value.integer);
  if (value.number) return fmt::format("{}", *value.number);
  if (value.boolean) return *value.boolean ? "true" : "false";
  if (value.text) return "\"" + *value.text + "\"";
  return "an array or a table";
}

void check_keys(const Values& values, LaunchConfig& out) {
  for (const auto& [key, value] : values) {
    if (const std::string* type = torchtitan_key_type(key)) {
      const std::string accepted = mismatch(*type, value);
      if (!accepted.empty())
        out.errors.push_back(fmt::format("line {}: {} is {}; torchtitan v0.2.2 declares it {}, so it takes {}",
                                         value.line, key, shown(value), *type, accepted));
      continue;
    }
    const std::string hint = did_you_mean(key, torchtitan_keys());
    out.errors.push_back(fmt::format("line {}: {} is not a torchtitan v0.2.2 job key{}; ConfigManager raises "
                                     "\"Invalid field names\" (torchtitan/config/manager.py:27-60)",
                                     value.line, key, hint.empty() ? "" : " (" + hint + ")"));
  }
}

// The data-parallel degrees: replicate (DDP or HSDP's outer) times shard (FSDP), -1 filling the world.
void read_data_parallel(const Values& values, LaunchConfig& out) {
  const std::int64_t replicate = integer(values, "parallelism.data_parallel_replicate_degree").value_or(1);
  const std::int64_t shard = integer(values, "parallelism.data_parallel_shard_degree").value_or(-1);
  const std::int64_t cp = integer(values, "parallelism.context_parallel_degree").value_or(1);
  if (sane_count(shard, 1'000'000) && sane_count(replicate, 1'000'000))
    take(out, out.layout, "dp", replicate * shard, where(values, "parallelism.data_parallel_shard_degree"));
  if (replicate > 1 && shard != 1)
    out.not_understood.push_back("HSDP (data_parallel_replicate_degree > 1 with sharding): gpuplan shards the states "
                                 "over every data-parallel rank");
  const bool fsdp = shard != 1 || cp > 1;   // CP always goes through FSDP (parallel_dims.py:333-335)
  const std::string reshard = text(values, "parallelism.fsdp_reshard_after_forward").value_or("default");
  const std::int64_t pp = integer(values, "parallelism.pipeline_parallel_degree").value_or(1);
  // "default" reshards after forward except under pipeline parallelism, where it keeps the gathered parameters.
  const bool keeps_gathered = reshard == "never" || (reshard == "default" && pp > 1);
  const std::int64_t zero = !fsdp ? 0 : keeps_gathered ? 2 : 3;
  take(out, out.layout, "zero", zero,
       fsdp ? fmt::format("FSDP2, fsdp_reshard_after_forward {}", reshard) : std::string("DDP (no sharding)"));
}

void read_degrees(const Values& values, LaunchConfig& out) {
  const std::pair<const char*, const char*> degrees[] = {
      {"parallelism.tensor_parallel_degree", "tp"},    {"parallelism.pipeline_parallel_degree", "pp"},
      {"parallelism.context_parallel_degree", "cp"},   {"parallelism.expert_parallel_degree", "ep"},
      {"parallelism.expert_tensor_parallel_degree", "etp"}};
  for (const auto& [key, option] : degrees)
    if (const auto value = integer(values, key)) take(out, out.layout, option, *value, where(values, key));
  // torchtitan's experts are not tensor-parallel unless asked (etp defaults to 1, gpuplan's to tp).
  if (integer(values, "parallelism.expert_parallel_degree").value_or(1) > 1 &&
      !integer(values, "parallelism.expert_tensor_parallel_degree"))
    take(out, out.layout, "etp", 1, "expert_tensor_parallel_degree unset (torchtitan's default 1)");
  read_data_parallel(values, out);
  // DeepEP's dispatch (expert_parallel_comm_backend, default "standard"; later releases add "hybridep").
  if (const auto backend = text(values, "parallelism.expert_parallel_comm_backend"))
    take(out, out.training, "moe_dispatcher", *backend == "standard" ? "alltoall" : "flex",
         where(values, "parallelism.expert_parallel_comm_backend"));
  // compile.enable (default false) compiles compile.components, by default the model and the loss
  // (torchtitan/config/job_config.py:722).
  if (boolean(values, "compile.enable").value_or(false))
    take(out, out.training, "compile", true, where(values, "compile.enable"));
  if (boolean(values, "parallelism.enable_async_tensor_parallel").value_or(false)) {
    take(out, out.timing, "tp_overlap", true, where(values, "parallelism.enable_async_tensor_parallel"));
    const bool compiled = boolean(values, "compile.enable").value_or(false);
    if (!compiled)
      out.issues.push_back("enable_async_tensor_parallel requires compile.enable with \"model\" in "
                           "compile.components (torchtitan/distributed/tensor_parallel.py:16-23)");
  }
}

void read_pipeline(const Values& values, LaunchConfig& out) {
  const std::int64_t pp = integer(values, "parallelism.pipeline_parallel_degree").value_or(1);
  if (pp <= 1) return;
  const std::string schedule = text(values, "parallelism.pipeline_parallel_schedule").value_or("1F1B");
  const bool looped = schedule == "Interleaved1F1B" || schedule == "LoopedBFS" ||
                      schedule == "InterleavedZeroBubble" || schedule == "ZBVZeroBubble";
  if (looped) {
    take(out, out.layout, "pp_schedule", "interleaved", where(values, "parallelism.pipeline_parallel_schedule"));
    if (!integer(values, "parallelism.pipeline_parallel_layers_per_stage"))
      take(out, out.layout, "vpp", 2, "a looped schedule without layers_per_stage: 2 stages per rank "
                                      "(pipeline_parallel.py:70-115)");
    else
      out.not_understood.push_back("pipeline_parallel_layers_per_stage: give --vpp (stages per rank)");
  } else if (schedule != "1F1B") {
    out.not_understood.push_back("pipeline_parallel_schedule " + schedule + " (priced as 1F1B)");
  }
}

void read_batch(const Values& values, LaunchConfig& out) {
  if (const auto seq = integer(values, "training.seq_len")) take(out, out.training, "seq_len", *seq, where(values, "training.seq_len"));
  const std::int64_t local = integer(values, "training.local_batch_size").value_or(8);
  const std::int64_t pp = integer(values, "parallelism.pipeline_parallel_degree").value_or(1);
  const std::int64_t micro = pp > 1 ? integer(values, "parallelism.pipeline_parallel_microbatch_size").value_or(1) : local;
  if (pp > 1 && (micro <= 0 || local % micro != 0))
    out.issues.push_back(fmt::format("local_batch_size {} is not a multiple of pipeline_parallel_microbatch_size {} "
                                     "(torchtitan/distributed/pipeline_parallel.py:186-201)", local, micro));
  take(out, out.training, "micro_batch", micro, pp > 1 ? "parallelism.pipeline_parallel_microbatch_size" : where(values, "training.local_batch_size"));
  const std::int64_t global = integer(values, "training.global_batch_size").value_or(-1);
  if (global > 0) take(out, out.training, "global_batch", global, where(values, "training.global_batch_size"));
  else out.batch_per_replica = local;   // global = local x dp once the GPU count is known
}

void read_precision(const Values& values, LaunchConfig& out) {
  const std::string dtype = text(values, "training.dtype").value_or("float32");
  const std::string param = text(values, "training.mixed_precision_param").value_or("bfloat16");
  if (dtype == "bfloat16") {
    take(out, out.training, "precision", "bf16", where(values, "training.dtype"));
    take(out, out.training, "no_master_weights", true, "training.dtype bfloat16 keeps no fp32 copy");
  } else {
    take(out, out.training, "precision", param == "bfloat16" ? "bf16" : "fp32", where(values, "training.mixed_precision_param"));
  }
  take(out, out.training, "grad_dtype", "fp32", "training.mixed_precision_reduce float32");
  if (boolean(values, "training.enable_cpu_offload").value_or(false)) {
    take(out, out.layout, "offload", "optimizer+params", where(values, "training.enable_cpu_offload"));
    take(out, out.layout, "offload_target", "cpu", "training.enable_cpu_offload");
  }
  if (const auto name = text(values, "optimizer.name")) {
    std::string lower = *name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "adamw" || lower == "adam") take(out, out.training, "optimizer", lower, where(values, "optimizer.name"));
    else out.not_understood.push_back("optimizer.name " + *name);
  }
}

// Returns N for selective_ac_option N (every Nth block checkpointed), which needs the model's layers; 0 otherwise.
std::int64_t read_recompute(const Values& values, LaunchConfig& out) {
  const std::string mode = text(values, "activation_checkpoint.mode").value_or("selective");
  const std::string option = text(values, "activation_checkpoint.selective_ac_option").value_or("2");
  // torchtitan takes the option as a frequency when str.isdigit() holds.
  const bool digits = !option.empty() && std::all_of(option.begin(), option.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  const std::int64_t every = digits ? whole_number(option).value_or(0) : 0;
  if (mode == "none" || mode == "full") {
    take(out, out.layout, "recompute", mode, where(values, "activation_checkpoint.mode"));
  } else if (mode == "selective" && option == "op") {
    take(out, out.layout, "recompute", "selective", "activation_checkpoint.mode selective, op");
  } else if (mode == "selective" && sane_count(every)) {
    return every;
  } else if (mode == "selective") {
    out.not_understood.push_back("activation_checkpoint selective_ac_option " + option +
                                 " (torchtitan takes \"op\" or a positive layer frequency)");
  } else {
    out.not_understood.push_back("activation_checkpoint.mode " + mode);
  }
  return 0;
}

// Layers of the model the file names on one pipeline rank; 0 when the model is not known.
std::int64_t stage_layers(const LaunchConfig& out) {
  if (!out.model.contains("model")) return 0;
  const nlohmann::json& model = out.model.at("model");
  const ModelConfig m = model.is_string() ? model_from_catalog(model.get<std::string>())
                                          : model_from_hf_config(model.at("config").dump(),
                                                                 model.at("name_or_path").get<std::string>());
  const std::int64_t pp = out.layout.contains("pp") ? out.layout.at("pp").get<std::int64_t>() : 1;
  return pp >= 1 ? m.layers / pp : 0;
}

// selective_ac_option N: every Nth block of a rank checkpointed in full (framework/titan_layer_ac.hpp).
void read_layer_frequency(std::int64_t every, LaunchConfig& out) {
  const std::int64_t layers = stage_layers(out);
  const std::string from = fmt::format("activation_checkpoint selective, every {} blocks", every);
  if (layers <= 0) {
    out.not_understood.push_back(from + " of a model gpuplan does not know: give --recompute full --recompute-layers");
    return;
  }
  const std::int64_t blocks = titan_checkpointed_blocks(layers, every);
  take(out, out.layout, "recompute", blocks > 0 ? "full" : "none", from);
  if (blocks > 0 && blocks < layers)
    take(out, out.layout, "recompute_layers", blocks, fmt::format("{} of {} layers per stage", blocks, layers));
}

void read_converters(const Values& values, LaunchConfig& out) {
  const auto found = values.find("model.converters");
  if (found == values.end()) return;
  for (const std::string& name : found->second.list) {
    if (name == "quantize.linear.float8" || name == "quantize.grouped_mm.float8") {
      take(out, out.training, "precision", "fp8", fmt::format("line {}: model.converters {}", found->second.line, name));
    } else {
      out.issues.push_back(fmt::format("line {}: model.converters \"{}\" is not a registered converter at v0.2.2 "
                                       "(quantize.linear.float8, quantize.grouped_mm.float8, quantize.linear.mx, "
                                       "quantize.grouped_mm.mx): building the converters raises KeyError "
                                       "(torchtitan/protocols/model_converter.py:41-66)",
                                       found->second.line, name));
    }
  }
}

// "a preset for 128 H100 GPUs": the GPU count a comment gives.
std::optional<std::int64_t> intended_gpus(const std::vector<std::string>& comments) {
  for (const std::string& comment : comments) {
    const std::size_t gpus = comment.find("GPUs");
    if (gpus == std::string::npos) continue;
    std::size_t end = comment.rfind(' ', gpus >= 1 ? gpus - 1 : 0);
    for (int words = 0; words < 3 && end != std::string::npos && end > 0; ++words) {
      std::size_t start = comment.rfind(' ', end - 1);
      start = start == std::string::npos ? 0 : start + 1;
      if (const auto count = whole_number(comment.substr(start, end - start)); count && *count > 0) return count;
      end = start >= 1 ? start - 1 : std::string::npos;
    }
  }
  return std::nullopt;
}

}  // namespace

LaunchConfig read_torchtitan_toml(std::string_view path, std::string_view text_view) {
  const TomlDocument document = read_toml(path, text_view);
  LaunchConfig out;
  out.framework = Framework::torchtitan;
  out.format = "torchtitan v0.2.2 TOML job";
  out.training["framework"] = "torchtitan";
  check_keys(document.values, out);
  read_degrees(document.values, out);
  read_pipeline(document.values, out);
  read_batch(document.values, out);
  read_precision(document.values, out);
  const std::int64_t checkpoint_every = read_recompute(document.values, out);
  read_converters(document.values, out);
  read_titan_model(text(document.values, "model.name").value_or("llama3"),
                   text(document.values, "model.flavor").value_or("debugmodel"), out);
  if (checkpoint_every > 0) read_layer_frequency(checkpoint_every, out);
  if (const auto gpus = intended_gpus(document.comments)) {
    out.gpus = *gpus;
    out.understood.push_back(fmt::format("a comment names {} GPUs -> gpus {} (torchrun sets the world size)", *gpus, *gpus));
  }
  return out;
}

}  // namespace gpuplan::framework
