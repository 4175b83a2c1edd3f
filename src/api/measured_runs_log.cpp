// calibrate --runs: a Megatron-LM training log (measured_runs.hpp). Megatron prints its arguments at start
// (megatron/training/arguments.py, _print_args: "  name ....... value" between "---- arguments ----" and
// "---- end of arguments ----") and every log interval a line with "elapsed time per iteration (ms): X"
// (training.py, training_log; newer releases print "X/mean").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/measured_runs.hpp"
#include "api/resolve.hpp"
#include "framework/reading.hpp"
#include "gpuplan/error.hpp"
#include "util/choices.hpp"
#include "util/from_chars.hpp"
#include "util/json_text.hpp"

namespace gpuplan::api::detail {

std::vector<RunRecord> read_runs_csv(const FileInput& file, const CalibrateRequest& defaults);

namespace {

constexpr std::string_view kArgumentsStart = "------------------------ arguments ------------------------";
constexpr std::string_view kArgumentsEnd = "end of arguments";
constexpr std::string_view kElapsed = "elapsed time per iteration (ms):";
// The first logged iteration (and any up to this one) are warm-up: allocation, compilation, NCCL setup.
constexpr long kWarmupIterations = 5;

struct Argument {
  std::string value;
  int line = 0;
};

// "  num_layers ...................................... 32" -> ("num_layers", "32").
std::optional<std::pair<std::string, std::string>> argument_line(const std::string& line) {
  const auto dots = line.find(" ..");
  if (dots == std::string::npos) return std::nullopt;
  const auto name_start = line.find_first_not_of(' ');
  if (name_start >= dots) return std::nullopt;
  const auto value_start = line.find_first_not_of(". ", dots);
  std::string value = value_start == std::string::npos ? "" : line.substr(value_start);
  while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
  return std::make_pair(line.substr(name_start, dots - name_start), value);
}

std::optional<double> number(std::string_view text) {
  const auto start = text.find_first_not_of(' ');
  if (start == std::string_view::npos) return std::nullopt;
  double v = 0;
  const auto [end, ec] = gpuplan::detail::from_chars_double(text.data() + start, text.data() + text.size(), v);
  if (ec != std::errc()) return std::nullopt;
  return v;
}

// A printed Python value as JSON: True/False, integers, floats, None (null); anything else as text.
nlohmann::json python_value(const std::string& v) {
  if (v == "True") return true;
  if (v == "False") return false;
  if (v == "None") return nullptr;
  std::int64_t i = 0;
  if (auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), i); ec == std::errc() && end == v.data() + v.size())
    return i;
  double d = 0;
  if (auto [end, ec] = gpuplan::detail::from_chars_double(v.data(), v.data() + v.size(), d);
      ec == std::errc() && end == v.data() + v.size())
    return d;
  return v;
}

struct Log {
  std::map<std::string, Argument> args;
  std::vector<std::pair<long, double>> iterations;   // (iteration, ms)
};

Log read_log(const std::string& text) {
  Log log;
  std::istringstream in(text);
  bool in_args = false;
  int number_of_line = 0;
  for (std::string line; std::getline(in, line);) {
    ++number_of_line;
    if (line.find(kArgumentsStart) != std::string::npos) in_args = true;
    else if (in_args && line.find(kArgumentsEnd) != std::string::npos) in_args = false;
    else if (in_args) {
      if (auto a = argument_line(line)) log.args[a->first] = {a->second, number_of_line};
    } else if (const auto at = line.find(kElapsed); at != std::string::npos) {
      const auto ms = number(std::string_view(line).substr(at + kElapsed.size()));
      const auto it = line.find("iteration ");
      const auto iteration = it == std::string::npos || it > at ? std::nullopt
                                                                 : number(std::string_view(line).substr(it + 10));
      // A line without its iteration number (or with one no run reaches) counts as the next one.
      const bool counted = iteration && *iteration >= 0 && *iteration < 1e15;
      const long index = counted ? static_cast<long>(*iteration) : static_cast<long>(log.iterations.size()) + 1;
      if (ms && std::isfinite(*ms) && *ms > 0) log.iterations.emplace_back(index, *ms);
    }
  }
  return log;
}

class Arguments {
 public:
  Arguments(const Log& log, const std::string& path) : log_(log), path_(path) {}
  bool has(const std::string& name) const { return log_.args.count(name) > 0 && log_.args.at(name).value != "None"; }
  std::string text(const std::string& name, const std::string& fallback) const {
    return has(name) ? log_.args.at(name).value : fallback;
  }
  bool flag(const std::string& name) const { return has(name) && log_.args.at(name).value == "True"; }
  std::int64_t integer(const std::string& name, std::optional<std::int64_t> fallback = std::nullopt) const {
    if (!has(name)) {
      if (fallback) return *fallback;
      throw InputError(path_ + ": argument " + name, "missing", "Megatron-LM's arguments block with " + name);
    }
    const Argument& a = log_.args.at(name);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(a.value.data(), a.value.data() + a.value.size(), v);
    if (ec != std::errc() || end != a.value.data() + a.value.size() || v < 1)
      throw InputError(fmt::format("{}:{}: argument {}", path_, a.line, name), "'" + a.value + "'",
                       "a whole number >= 1");
    return v;
  }
  // A finite number > 0 (an MoE capacity factor).
  double positive_number(const std::string& name) const {
    const Argument& a = log_.args.at(name);
    double v = 0;
    const auto [end, ec] = gpuplan::detail::from_chars_double(a.value.data(), a.value.data() + a.value.size(), v);
    if (ec != std::errc() || end != a.value.data() + a.value.size() || !(v > 0) || !std::isfinite(v))
      throw InputError(fmt::format("{}:{}: argument {}", path_, a.line, name), "'" + a.value + "'",
                       "a finite number > 0");
    return v;
  }
  // A probability in [0, 1] (dropout), or the fallback when the block does not state it.
  double probability(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    const Argument& a = log_.args.at(name);
    const std::optional<double> v = probability_of(a.value);
    if (!v)
      throw InputError(fmt::format("{}:{}: argument {}", path_, a.line, name), "'" + a.value + "'",
                       "a probability from 0 to 1");
    return *v;
  }
  // The model as Megatron's own arguments describe it (model_type "megatron", src/io/megatron_args_model.cpp).
  std::string model_config() const {
    nlohmann::json j = {{"model_type", "megatron"}};
    for (const auto& [name, a] : log_.args)
      if (a.value != "None") j[name] = python_value(a.value);
    if (!has("vocab_size") && has("padded_vocab_size")) j["vocab_size"] = j["padded_vocab_size"];
    if (!has("max_position_embeddings") && has("seq_length")) j["max_position_embeddings"] = j["seq_length"];
    // A log is bytes: a data path in Latin-1 is not UTF-8.
    return gpuplan::detail::json_text(j);
  }

 private:
  const Log& log_;
  const std::string& path_;
};

void set_layout(const Arguments& a, EstimateRequest& r) {
  LayoutOptions& l = r.layout;
  l.tp = a.integer("tensor_model_parallel_size", 1);
  l.pp = a.integer("pipeline_model_parallel_size", 1);
  l.cp = a.integer("context_parallel_size", 1);
  l.ep = a.integer("expert_model_parallel_size", 1);
  if (a.has("virtual_pipeline_model_parallel_size")) {
    l.vpp = a.integer("virtual_pipeline_model_parallel_size");
    if (l.vpp > 1) l.pp_schedule = "interleaved";
  }
  if (a.has("data_parallel_size")) l.dp = a.integer("data_parallel_size");
  else if (a.has("world_size")) l.gpus = a.integer("world_size");
  l.sequence_parallel = a.flag("sequence_parallel");
  l.zero = a.flag("use_distributed_optimizer") ? 1 : 0;
  const std::string granularity = a.text("recompute_granularity", "none");
  l.recompute = granularity == "full" || granularity == "selective" ? granularity : "none";
  // Flash attention unless the log asks for the unfused or local kernels (--attention-backend, printed as
  // "AttnBackend.flash"; older logs have only --use-flash-attn), with the backend it names.
  const framework::MegatronAttention read = framework::megatron_attention(a.text("attention_backend", ""));
  l.attention = read.attention;
  if (!read.backend.empty()) l.attention_backend = read.backend;
}

// What the run trained with beyond the layout: dropout (Megatron-LM's default is 0.1, so a log states it), the
// dtype gradients are reduced in, and the cross-entropy kernel, as src/framework/megatron_convert.cpp reads them
// from a launch script.
void set_training_options(const Arguments& a, EstimateRequest& r) {
  r.training.dropout = std::max(a.probability("hidden_dropout", 0), a.probability("attention_dropout", 0));
  const std::string main_grads = a.text("main_grads_dtype", "");   // "bf16", or as printed: "torch.bfloat16"
  const bool bf16 = a.flag("grad_reduce_in_bf16") || main_grads == "bf16" || main_grads == "torch.bfloat16";
  r.training.grad_dtype = bf16 ? "bf16" : "fp32";   // else Megatron-LM's fp32 main_grad
  // Under fp16 Megatron-LM keeps and reduces the gradients in fp16 unless --accumulate-allreduce-grads-in-fp32
  // (only bf16 forces it on: arguments.py validate_args).
  if (a.flag("fp16") && a.text("accumulate_allreduce_grads_in_fp32", "") == "False") r.training.grad_dtype = "fp16";
  if (a.flag("cross_entropy_loss_fusion"))
    r.training.loss = a.text("cross_entropy_fusion_impl", "native") == "te" ? "fused-te" : "fused-native";
}

// An MoE run's expert tensor parallelism, capacity factor (None: dropless), padding to capacity and token dispatcher
// (flex: DeepEP or HybridEP; Megatron-LM's allgather and alltoall are priced as the all-to-all), as
// src/framework/megatron_convert.cpp reads them from a launch script. A dense run prints its expert tensor-parallel
// size too (validate_args sets it to the TP size), which means nothing without experts.
void set_moe_options(const Arguments& a, EstimateRequest& r) {
  if (!a.has("num_experts") || a.integer("num_experts") < 2) return;
  if (a.has("expert_tensor_parallel_size")) r.layout.etp = a.integer("expert_tensor_parallel_size");
  if (a.has("moe_expert_capacity_factor"))
    r.training.moe_capacity_factor = a.positive_number("moe_expert_capacity_factor");
  r.training.moe_pad_to_capacity = a.flag("moe_pad_expert_input_to_capacity");
  const std::string dispatcher = a.text("moe_token_dispatcher_type", "");
  if (choices::find(choices::kMoeDispatcher, dispatcher) != nullptr) r.training.moe_dispatcher = dispatcher;
}

double median_step_ms(const Log& log, const std::string& path) {
  std::vector<double> ms;
  for (std::size_t i = 1; i < log.iterations.size(); ++i)
    if (log.iterations[i].first > kWarmupIterations) ms.push_back(log.iterations[i].second);
  if (ms.empty())
    throw InputError(path, fmt::format("{} iteration lines", log.iterations.size()),
                     fmt::format("'elapsed time per iteration (ms)' lines after the first logged one and past "
                                 "iteration {} (warm-up)",
                                 kWarmupIterations));
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  return n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

RunRecord log_record(const Log& log, const FileInput& file, const CalibrateRequest& defaults) {
  const Arguments a(log, file.path);
  RunRecord rec;
  rec.label = file.path;
  EstimateRequest& r = rec.request;
  r.model.name_or_path = file.path;
  r.model.config = a.model_config();
  r.training.seq_len = a.integer("seq_length");
  r.training.micro_batch = a.integer("micro_batch_size", 1);
  if (a.has("global_batch_size")) r.training.global_batch = a.integer("global_batch_size");
  r.training.precision = a.flag("bf16") ? "bf16" : a.flag("fp16") ? "fp16" : defaults.precision.value_or("fp32");
  set_layout(a, r);
  set_training_options(a, r);
  set_moe_options(a, r);
  r.cluster.system = defaults.cluster.system;
  r.hardware.gpu = defaults.gpu;
  r.hardware.catalog = defaults.catalog;
  r.timing.tp_overlap = a.flag("tp_comm_overlap");
  r.timing.dp_overlap = a.flag("overlap_grad_reduce");
  // Megatron-LM before the option (Megatron-Core's interleaved schedule added it) waited for every pipeline send.
  r.timing.pp_overlap = a.flag("overlap_p2p_comm");
  // A Megatron-LM that prints no such argument (before Megatron-Core's DDP, or Megatron-DeepSpeed) has no check.
  r.training.grad_nan_check = a.flag("check_for_nan_in_loss_and_grad");
  r.timing.perf = defaults.perf;
  rec.step_s = median_step_ms(log, file.path) / 1000;
  return rec;
}

}  // namespace

std::optional<double> probability_of(std::string_view text) {
  double v = 0;
  const auto [end, ec] = gpuplan::detail::from_chars_double(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= 0 && v <= 1)) return std::nullopt;
  return v;
}

std::vector<RunRecord> read_runs(const FileInput& file, const CalibrateRequest& defaults) {
  const std::string& text = file_text(file, "runs");
  if (text.find(kArgumentsStart) == std::string::npos) return read_runs_csv(file, defaults);
  return {log_record(read_log(text), file, defaults)};
}

}  // namespace gpuplan::api::detail
