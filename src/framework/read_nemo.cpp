// NeMo 2.0 read into request options: a recipe's Python source, or a `nemo llm pretrain --factory NAME key=value
// ...` override list on top of a built-in recipe. Attribute meanings: nemo/lightning/pytorch/strategies/
// megatron_strategy.py, plugins/mixed_precision.py and Megatron-Core's configs (data/frameworks/nemo_keys.json).
#include <fmt/format.h>

#include <cctype>
#include <sstream>

#include "framework/nemo_values.hpp"
#include "framework/reading.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

const NemoValue* find(const NemoValues& values, const std::string& key) {
  const auto found = values.find(key);
  return found == values.end() || found->second.value == "None" ? nullptr : &found->second;
}

std::string note(const NemoValue& v, const std::string& key) { return v.from + ": " + key + "=" + v.value; }

// A boolean attribute: Python's True / False, or the spellings the override parser turns into them. Anything else is
// reported (Python would take a non-empty string as true), never read as false.
std::optional<bool> boolean(LaunchConfig& out, const NemoValue& v, const std::string& key) {
  if (v.value == "True" || v.value == "true" || v.value == "1") return true;
  if (v.value == "False" || v.value == "false" || v.value == "0") return false;
  out.issues.push_back(fmt::format("{}: {} is not a boolean (True or False)", note(v, key), key));
  return std::nullopt;
}

std::string unquoted(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

void take_integer(LaunchConfig& out, nlohmann::json& group, const NemoValues& values, const std::string& key,
                  const char* option) {
  const NemoValue* v = find(values, key);
  if (v == nullptr) return;
  if (const auto number = whole_number(v->value)) take(out, group, option, *number, note(*v, key));
  else out.issues.push_back(fmt::format("{}: {} is not an integer", note(*v, key), key));
}

// model.config.hierarchical_context_parallel_sizes: a list [all-to-all size, ring size].
void read_hierarchical_cp(const NemoValues& values, LaunchConfig& out) {
  const std::string key = "model.config.hierarchical_context_parallel_sizes";
  const NemoValue* v = find(values, key);
  if (v == nullptr) return;
  std::string text = v->value;
  for (char& c : text)
    if (c == '[' || c == ']' || c == '(' || c == ')' || c == ',') c = ' ';
  std::istringstream words(text);
  std::string first, second, rest;
  const auto inner = (words >> first >> second) && !(words >> rest) ? whole_number(first) : std::nullopt;
  if (inner) take(out, out.layout, "cp_a2a_size", *inner, note(*v, key));
  else out.issues.push_back(note(*v, key) + ": Transformer Engine runs two levels ([all-to-all size, ring size])");
}

void read_layout(const NemoValues& values, LaunchConfig& out) {
  const std::string s = "trainer.strategy.";
  take_integer(out, out.layout, values, s + "tensor_model_parallel_size", "tp");
  take_integer(out, out.layout, values, s + "pipeline_model_parallel_size", "pp");
  take_integer(out, out.layout, values, s + "context_parallel_size", "cp");
  if (const NemoValue* v = find(values, "model.config.cp_comm_type"))
    take(out, out.layout, "cp_comm_type", unquoted(v->value), note(*v, "model.config.cp_comm_type"));
  read_hierarchical_cp(values, out);
  take_integer(out, out.layout, values, s + "expert_model_parallel_size", "ep");
  take_integer(out, out.layout, values, s + "expert_tensor_parallel_size", "etp");
  take_integer(out, out.layout, values, s + "num_layers_in_first_pipeline_stage", "first_stage_layers");
  take_integer(out, out.layout, values, s + "num_layers_in_last_pipeline_stage", "last_stage_layers");
  if (const NemoValue* v = find(values, s + "virtual_pipeline_model_parallel_size")) {
    take_integer(out, out.layout, values, s + "virtual_pipeline_model_parallel_size", "vpp");
    take(out, out.layout, "pp_schedule", "interleaved", note(*v, s + "virtual_pipeline_model_parallel_size"));
  }
  if (const NemoValue* v = find(values, s + "sequence_parallel"))
    if (const auto on = boolean(out, *v, s + "sequence_parallel"))
      take(out, out.layout, "sequence_parallel", *on, note(*v, s + "sequence_parallel"));
  const std::int64_t pp = out.layout.value("pp", std::int64_t{1});
  if (pp > 1 && find(values, s + "pipeline_dtype") == nullptr && find(values, "trainer.plugins.pipeline_dtype") == nullptr)
    out.issues.push_back("pipeline_model_parallel_size > 1 needs pipeline_dtype (nemo/collections/llm/api.py:1369-1381)");
}

void read_states(const NemoValues& values, LaunchConfig& out) {
  const NemoValue* distributed = find(values, "optim.config.use_distributed_optimizer");
  if (distributed == nullptr) distributed = find(values, "trainer.strategy.ddp.use_distributed_optimizer");
  std::int64_t zero = distributed != nullptr && boolean(out, *distributed, "use_distributed_optimizer").value_or(false);
  if (const NemoValue* v = find(values, "trainer.strategy.ddp.data_parallel_sharding_strategy")) {
    const std::string strategy = unquoted(v->value);
    if (strategy == "optim_grads_params" || strategy == "optim_grads" || strategy == "optim" || strategy == "no_shard")
      zero = strategy == "optim_grads_params" ? 3 : strategy == "optim_grads" ? 2 : strategy == "optim" ? 1 : zero;
    else
      out.issues.push_back(note(*v, "data_parallel_sharding_strategy") +
                           ": accepted: no_shard, optim, optim_grads, optim_grads_params");
  }
  take(out, out.layout, "zero", zero, distributed != nullptr ? note(*distributed, "use_distributed_optimizer")
                                                             : std::string("no distributed optimizer"));
  if (const NemoValue* v = find(values, "optim.config.optimizer_cpu_offload");
      v != nullptr && boolean(out, *v, "optim.config.optimizer_cpu_offload").value_or(false)) {
    take(out, out.layout, "offload", "optimizer", note(*v, "optim.config.optimizer_cpu_offload"));
    take(out, out.layout, "offload_target", "cpu", note(*v, "optim.config.optimizer_cpu_offload"));
  }
  if (const NemoValue* v = find(values, "trainer.strategy.ddp.overlap_grad_reduce");
      v != nullptr && !boolean(out, *v, "trainer.strategy.ddp.overlap_grad_reduce").value_or(true))
    take(out, out.timing, "no_dp_overlap", true, note(*v, "trainer.strategy.ddp.overlap_grad_reduce"));
  if (const NemoValue* v = find(values, "trainer.callbacks[MegatronCommOverlapCallback].tp_comm_overlap"))
    if (const auto on = boolean(out, *v, "tp_comm_overlap")) take(out, out.timing, "tp_overlap", *on, note(*v, "tp_comm_overlap"));
  // The callback overlaps the pipeline's sends and receives when there are virtual stages, unless set off.
  if (const NemoValue* v = find(values, "trainer.callbacks[MegatronCommOverlapCallback].overlap_p2p_comm"))
    if (const auto on = boolean(out, *v, "overlap_p2p_comm"); on && !*on)
      take(out, out.timing, "no_pp_overlap", true, note(*v, "overlap_p2p_comm"));
  if (const NemoValue* v = find(values, "model.config.attention_backend")) {
    take_attention_backend(out, unquoted(v->value), note(*v, "model.config.attention_backend"));
  }
  if (const NemoValue* v = find(values, "optim.config.optimizer")) {
    const std::string name = unquoted(v->value);
    if (name == "adam" || name == "sgd") take(out, out.training, "optimizer", name, note(*v, "optim.config.optimizer"));
    else out.not_understood.push_back(note(*v, "optim.config.optimizer") + " (gpuplan models Adam and SGD states)");
  }
  if (const NemoValue* v = find(values, "model.config.moe_expert_capacity_factor")) {
    const auto factor = nlohmann::json::parse(v->value, nullptr, false);
    if (factor.is_number()) take(out, out.training, "moe_capacity_factor", factor, note(*v, "moe_expert_capacity_factor"));
    else out.issues.push_back(note(*v, "moe_expert_capacity_factor") + ": moe_expert_capacity_factor is not a number");
  }
  if (const NemoValue* v = find(values, "model.config.moe_token_dispatcher_type"))
    take_moe_dispatcher(out, unquoted(v->value), note(*v, "moe_token_dispatcher_type"));
}

void read_recompute(const NemoValues& values, LaunchConfig& out) {
  const NemoValue* v = find(values, "model.config.recompute_granularity");
  if (v == nullptr) return;
  const std::string granularity = unquoted(v->value);
  take(out, out.layout, "recompute", granularity, note(*v, "model.config.recompute_granularity"));
  const NemoValue* method = find(values, "model.config.recompute_method");
  const NemoValue* layers = find(values, "model.config.recompute_num_layers");
  if (granularity == "full" && method != nullptr && unquoted(method->value) == "block" && layers != nullptr)
    take_integer(out, out.layout, values, "model.config.recompute_num_layers", "recompute_layers");
}

void read_training(const NemoValues& values, LaunchConfig& out) {
  take_integer(out, out.training, values, find(values, "model.config.seq_length") ? "model.config.seq_length" : "data.seq_length", "seq_len");
  take_integer(out, out.training, values, "data.micro_batch_size", "micro_batch");
  take_integer(out, out.training, values, "data.global_batch_size", "global_batch");
  const NemoValue* precision = find(values, "trainer.plugins.precision");
  const std::string name = precision != nullptr ? unquoted(precision->value) : "32";
  const std::string mapped = name.find("bf16") != std::string::npos ? "bf16" : name.find("16") != std::string::npos ? "fp16" : "fp32";
  if (const NemoValue* fp8 = find(values, "trainer.plugins.fp8"))
    take(out, out.training, "precision", "fp8", note(*fp8, "trainer.plugins.fp8"));
  else if (precision != nullptr)
    take(out, out.training, "precision", mapped, note(*precision, "trainer.plugins.precision"));
  const NemoValue* gather = find(values, "trainer.plugins.fp8_param_gather");
  if (gather != nullptr && find(values, "trainer.plugins.fp8") != nullptr &&
      boolean(out, *gather, "trainer.plugins.fp8_param_gather").value_or(false))
    take(out, out.training, "fp8_param_gather", true, note(*gather, "trainer.plugins.fp8_param_gather"));
  const NemoValue* reduce = find(values, "trainer.strategy.ddp.grad_reduce_in_fp32");
  if (reduce == nullptr) reduce = find(values, "trainer.plugins.grad_reduce_in_fp32");
  if (const auto fp32 = reduce != nullptr ? boolean(out, *reduce, "grad_reduce_in_fp32") : std::nullopt)
    take(out, out.training, "grad_dtype", *fp32 ? "fp32" : mapped == "fp32" ? "fp32" : mapped == "fp16" ? "fp16" : "bf16",
         note(*reduce, "grad_reduce_in_fp32"));
  // GPTConfig turns on Megatron's fused cross-entropy (native implementation) unless the recipe says otherwise.
  const NemoValue* fusion = find(values, "model.config.cross_entropy_loss_fusion");
  const bool fused = fusion == nullptr || boolean(out, *fusion, "model.config.cross_entropy_loss_fusion").value_or(true);
  take(out, out.training, "loss", fused ? "fused-native" : "unfused",
       fusion != nullptr ? note(*fusion, "model.config.cross_entropy_loss_fusion")
                         : std::string("GPTConfig.cross_entropy_loss_fusion default True"));
}

void read_cluster(const NemoValues& values, LaunchConfig& out) {
  const NemoValue* nodes = find(values, "trainer.num_nodes");
  const NemoValue* devices = find(values, "trainer.devices");
  const auto node_count = nodes != nullptr ? whole_number(nodes->value) : std::optional<std::int64_t>{1};
  const auto per_node = devices != nullptr ? whole_number(devices->value) : std::nullopt;
  const bool nodes_ok = node_count.has_value() && sane_count(node_count.value_or(0), 1'000'000);
  const bool devices_ok = per_node.has_value() && sane_count(per_node.value_or(0), 1'000'000);
  // A count that is there but not a count is reported; the GPUs are then not taken from the file at all.
  if (nodes != nullptr && !nodes_ok)
    out.issues.push_back(note(*nodes, "trainer.num_nodes") + ": trainer.num_nodes is not a node count");
  if (devices != nullptr && !devices_ok)
    out.issues.push_back(note(*devices, "trainer.devices") + ": trainer.devices is not a GPU count");
  if (!nodes_ok || !devices_ok) return;
  out.nodes = *node_count;
  out.gpus = *node_count * *per_node;
  out.understood.push_back(fmt::format("trainer.num_nodes {} x trainer.devices {} -> gpus {}", *node_count, *per_node, *out.gpus));
}

void read_model(const NemoValues& values, LaunchConfig& out) {
  const NemoValue* config = find(values, "model.config");
  if (config == nullptr) return;
  if (const auto model = nemo_model_of(config->value)) take(out, out.model, "model", *model, note(*config, "model.config"));
  else out.not_understood.push_back(note(*config, "model.config") + " (a model config gpuplan does not know; give --model)");
  take_integer(out, out.model, values, "model.config.num_moe_experts", "experts");
}

// Attribute paths the conversion above reads; any other relevant one is reported as not understood.
bool converted(const std::string& key) {
  static const char* const kRead[] = {
      "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
      "expert_model_parallel_size", "expert_tensor_parallel_size", "num_layers_in_first_pipeline_stage",
      "num_layers_in_last_pipeline_stage", "virtual_pipeline_model_parallel_size", "sequence_parallel",
      "pipeline_dtype", "use_distributed_optimizer", "data_parallel_sharding_strategy", "optimizer_cpu_offload",
      "overlap_grad_reduce", "tp_comm_overlap", "overlap_p2p_comm", "recompute_granularity", "recompute_method",
      "recompute_num_layers",
      "seq_length", "micro_batch_size", "global_batch_size", "precision", "fp8", "grad_reduce_in_fp32",
      "cross_entropy_loss_fusion", "num_nodes", "devices", "num_moe_experts", "overlap_param_gather",
      "attention_backend", "optimizer", "use_precision_aware_optimizer", "optimizer_offload_fraction", "fsdp",
      "use_megatron_fsdp", "moe_expert_capacity_factor", "cp_comm_type", "hierarchical_context_parallel_sizes"};
  const std::string leaf = key.substr(key.rfind('.') + 1);
  for (const char* read : kRead)
    if (leaf == read) return true;
  return key == "model.config";
}

void report_unread(const NemoValues& values, LaunchConfig& out) {
  for (const auto& [key, v] : values) {
    if (converted(key)) continue;
    if (nemo_key_type(key) != nullptr)
      out.not_understood.push_back(note(v, key) + " (not modelled)");
    else if (v.from.rfind("override", 0) == 0)
      out.not_understood.push_back(note(v, key) + " (an attribute gpuplan does not know; NeMo applies it)");
  }
}

// Words of an override list, split as a shell would (quotes kept together, backslash-newline joined).
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0 && c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') { ++i; continue; }
    if (quote != 0) { if (c == quote) quote = 0; else word += c; continue; }
    if (c == '"' || c == '\'') { quote = c; continue; }
    if (c == '#' && word.empty()) { while (i < text.size() && text[i] != '\n') ++i; continue; }
    if (std::isspace(static_cast<unsigned char>(c)) != 0) { if (!word.empty()) out.push_back(std::move(word)); word.clear(); continue; }
    word += c;
  }
  if (quote != 0) throw InputError("override list", "an unterminated quote", "a `nemo llm pretrain` command line");
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

// "llama3_70b(num_nodes=4, name='x')": the factory and the arguments that reach trainer().
NemoValues factory_values(const std::string& factory, std::string_view path) {
  const std::size_t open = factory.find('(');
  const std::string name = factory.substr(0, open);
  std::optional<NemoValues> values = builtin_recipe(name);
  if (!values)
    throw InputError(std::string(path) + ": --factory", "'" + name + "'", "a built-in recipe: llama3_8b, llama3_70b, mixtral_8x7b");
  if (open == std::string::npos) return *values;
  const std::pair<std::string, const char*> arguments[] = {{"num_nodes=", "trainer.num_nodes"},
                                                            {"num_gpus_per_node=", "trainer.devices"}};
  for (const auto& [argument, key] : arguments) {
    const std::size_t at = factory.find(argument, open);
    if (at == std::string::npos) continue;
    const std::size_t start = at + argument.size();
    const std::string value = factory.substr(start, factory.find_first_of(",)", start) - start);
    (*values)[key] = {value, "--factory " + factory};
  }
  return *values;
}

NemoValues override_values(std::string_view path, std::string_view text) {
  const std::vector<std::string> words = words_of(text);
  NemoValues values;
  bool factory_seen = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "--factory" && i + 1 < words.size()) {
      NemoValues base = factory_values(words[++i], path);
      for (auto& [key, value] : values) base[key] = value;   // overrides given before --factory still win
      values = std::move(base);
      factory_seen = true;
      continue;
    }
    const std::size_t equals = words[i].find('=');
    if (equals == std::string::npos || equals == 0) continue;   // nemo, llm, pretrain, -y ...
    std::string key = words[i].substr(0, equals);
    if (key.rfind("recipe.", 0) == 0) key = key.substr(7);
    values[key] = {words[i].substr(equals + 1), "override " + words[i]};
  }
  if (!factory_seen && values.empty())
    throw InputError(std::string(path), "no --factory and no key=value overrides",
                     "a NeMo recipe (.py) or a `nemo llm pretrain --factory NAME key=value ...` line");
  return values;
}

}  // namespace

LaunchConfig read_nemo(std::string_view path, std::string_view text) {
  const bool python = text.find("def trainer(") != std::string_view::npos;
  const NemoValues values = python ? recipe_values_from_python(path, text) : override_values(path, text);
  LaunchConfig out;
  out.framework = Framework::nemo;
  out.format = python ? "NeMo recipe (Python)" : "NeMo recipe overrides";
  out.training["framework"] = "nemo";
  read_model(values, out);
  read_layout(values, out);
  read_states(values, out);
  read_recompute(values, out);
  read_training(values, out);
  read_cluster(values, out);
  report_unread(values, out);
  return out;
}

}  // namespace gpuplan::framework
