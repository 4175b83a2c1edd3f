// calibrate --runs: CSV tables of measured runs (measured_runs.hpp). The columns and their spellings are those of
// docs/estimate.md; the vTrain table of validation/data reads as it is.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "api/measured_runs.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "util/choices.hpp"
#include "util/from_chars.hpp"

namespace gpuplan::api::detail {

namespace {

// Each spelling (lower case, spaces, dashes and brackets as '_') of each column.
const std::map<std::string, std::string>& column_names() {
  static const std::map<std::string, std::string> names = {
      {"model", "model"}, {"model_name", "model"}, {"hidden", "hidden"}, {"hidden_size", "hidden"},
      {"heads", "heads"}, {"attention_heads", "heads"}, {"num_attention_heads", "heads"},
      {"kv_heads", "kv_heads"}, {"num_query_groups", "kv_heads"}, {"layers", "layers"}, {"num_layers", "layers"},
      {"ffn_hidden", "ffn_hidden"}, {"ffn_hidden_size", "ffn_hidden"}, {"vocab", "vocab"}, {"vocab_size", "vocab"},
      {"seq", "seq"}, {"seq_len", "seq"}, {"seq_length", "seq"}, {"sequence_length", "seq"},
      {"system", "system"}, {"gpu", "gpu"}, {"gpus", "gpus"}, {"nodes", "nodes"},
      {"tp", "tp"}, {"tensor_parallelism", "tp"}, {"pp", "pp"}, {"pipeline_parallelism", "pp"},
      {"dp", "dp"}, {"data_parallelism", "dp"}, {"cp", "cp"}, {"context_parallelism", "cp"},
      {"ep", "ep"}, {"expert_parallelism", "ep"}, {"etp", "etp"}, {"expert_tensor_parallelism", "etp"},
      {"expert_tensor_parallel_size", "etp"}, {"vpp", "vpp"},
      {"moe_capacity_factor", "moe_capacity_factor"}, {"moe_expert_capacity_factor", "moe_capacity_factor"},
      {"capacity_factor", "moe_capacity_factor"}, {"moe_pad_to_capacity", "moe_pad_to_capacity"},
      {"moe_pad_expert_input_to_capacity", "moe_pad_to_capacity"}, {"moe_dispatcher", "moe_dispatcher"},
      {"moe_token_dispatcher_type", "moe_dispatcher"},
      {"micro_batch", "micro_batch"}, {"micro_batch_size", "micro_batch"}, {"mbs", "micro_batch"},
      {"global_batch", "global_batch"}, {"global_batch_size", "global_batch"}, {"gbs", "global_batch"},
      {"recompute", "recompute"}, {"precision", "precision"}, {"attention", "attention"},
      {"attention_backend", "attention_backend"}, {"zero", "zero"},
      {"sequence_parallel", "sequence_parallel"}, {"tp_overlap", "tp_overlap"}, {"dp_overlap", "dp_overlap"},
      {"pp_overlap", "pp_overlap"}, {"overlap_p2p_comm", "pp_overlap"},
      {"tp_overlap_sms", "tp_overlap_sms"}, {"grad_nan_check", "grad_nan_check"},
      {"grad_dtype", "grad_dtype"}, {"main_grads_dtype", "grad_dtype"}, {"dropout", "dropout"},
      {"hidden_dropout", "dropout"}, {"loss", "loss"},
      {"step_ms", "step_ms"}, {"step_time_ms", "step_ms"}, {"iteration_time_ms", "step_ms"},
      {"step_s", "step_s"}, {"step_time_s", "step_s"}, {"iteration_time_s", "step_s"},
      {"release", ""}, {"note", ""}, {"label", ""}};
  return names;
}

std::string normalized(std::string name) {
  std::string out;
  for (char c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '#' || c == '(' || c == ')') continue;
    if (c == ' ' || c == '-' || c == '\t') c = '_';
    if (c == '_' && (out.empty() || out.back() == '_')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) {
    const auto first = cell.find_first_not_of(" \t\"");
    const auto last = cell.find_last_not_of(" \t\"");
    out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::string accepted_columns() {
  return "model, hidden, heads, kv_heads, layers, ffn_hidden, vocab, seq, system, gpu, gpus, nodes, tp, pp, dp, cp, "
         "ep, vpp, micro_batch, global_batch, recompute, precision, attention, zero, sequence_parallel, tp_overlap, "
         "tp_overlap_sms, dp_overlap, pp_overlap, grad_nan_check, grad_dtype, dropout, loss, and the step time as "
         "step_ms or step_s (docs/estimate.md lists every spelling)";
}

// One data row: its cells by column, and where it is for messages.
struct Row {
  std::map<std::string, std::pair<std::string, std::string>> values;  // column -> (value, header as written)
  std::string where;
  bool has(const std::string& key) const { return values.count(key) > 0 && !values.at(key).first.empty(); }
  const std::string& text(const std::string& key) const { return values.at(key).first; }
  InputError bad(const std::string& key, const std::string& accepted) const {
    return InputError(fmt::format("{}: column '{}'", where, values.at(key).second), "'" + text(key) + "'", accepted);
  }
  std::int64_t integer(const std::string& key) const {
    std::int64_t v = 0;
    const std::string& t = text(key);
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || v < 1) throw bad(key, "a whole number >= 1");
    return v;
  }
  // A finite number >= 0, else an error saying what is `accepted`.
  double number(const std::string& key, const std::string& accepted) const {
    double v = 0;
    const std::string& t = text(key);
    const auto [end, ec] = gpuplan::detail::from_chars_double(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || !(v >= 0) || !std::isfinite(v)) throw bad(key, accepted);
    return v;
  }
  double seconds(const std::string& key, double unit) const {
    const double v = number(key, "a finite step time > 0");
    if (v == 0) throw bad(key, "a finite step time > 0");
    return v * unit;
  }
  double probability(const std::string& key) const {
    const std::optional<double> v = probability_of(text(key));
    if (!v) throw bad(key, "a probability from 0 to 1");
    return *v;
  }
  // The cell when it names a value of `table` (the names the command line takes), else an error listing them.
  template <typename E, std::size_t N>
  std::string choice(const std::string& key, const choices::Named<E> (&table)[N]) const {
    if (const choices::Named<E>* entry = choices::find(table, text(key))) return entry->name;
    throw bad(key, "one of " + choices::names(table, "|"));
  }
  bool flag(const std::string& key) const {
    const std::string t = normalized(text(key));
    if (t == "on" || t == "true" || t == "1" || t == "yes") return true;
    if (t == "off" || t == "false" || t == "0" || t == "no") return false;
    throw bad(key, "on or off");
  }
};

void set_model(const Row& row, EstimateRequest& r) {
  ModelOverrides& o = r.overrides;
  auto take = [&](const char* key, std::optional<std::int64_t>& field) {
    if (row.has(key)) field = row.integer(key);
  };
  take("hidden", o.hidden);
  take("heads", o.heads);
  take("kv_heads", o.kv_heads);
  take("layers", o.layers);
  take("ffn_hidden", o.ffn_hidden);
  take("vocab", o.vocab);
  if (row.has("model")) {
    r.model.name_or_path = row.text("model");
    return;
  }
  if (!o.hidden || !o.heads || !o.layers)
    throw InputError(row.where, "no model", "a model column, or hidden, heads and layers columns");
  // A GPT-2 style decoder of the given shape (GPT-2's vocabulary, learned positions over the sequence), as
  // Megatron-LM's GPT models without a model name are.
  r.model.name_or_path = "gpt2";
  if (!o.kv_heads) o.kv_heads = o.heads;
  if (*o.hidden % *o.heads == 0) o.head_dim = *o.hidden / *o.heads;
  if (!o.ffn_hidden) o.ffn_hidden = 4 * *o.hidden;
  o.max_positions = r.training.seq_len;
}

void set_layout(const Row& row, EstimateRequest& r) {
  LayoutOptions& l = r.layout;
  if (row.has("tp")) l.tp = row.integer("tp");
  if (row.has("pp")) l.pp = row.integer("pp");
  if (row.has("cp")) l.cp = row.integer("cp");
  if (row.has("ep")) l.ep = row.integer("ep");
  if (row.has("etp")) l.etp = row.integer("etp");
  if (row.has("vpp")) l.vpp = row.integer("vpp");
  if (l.vpp > 1) l.pp_schedule = "interleaved";
  if (row.has("dp")) l.dp = row.integer("dp");
  if (row.has("gpus")) l.gpus = row.integer("gpus");
  if (row.has("zero")) l.zero = row.text("zero") == "0" ? 0 : row.integer("zero");
  if (row.has("recompute")) l.recompute = row.text("recompute");
  if (row.has("attention")) l.attention = row.text("attention");
  if (row.has("attention_backend")) l.attention_backend = row.text("attention_backend");
  if (row.has("sequence_parallel")) l.sequence_parallel = row.flag("sequence_parallel");
}

// MoE: a capacity factor (empty or 0: dropless), padding to it, and the token dispatcher.
void set_moe_options(const Row& row, TrainingOptions& t) {
  if (row.has("moe_capacity_factor")) {
    const double factor = row.number("moe_capacity_factor", "a capacity factor > 0, or 0 for dropless");
    if (factor > 0) t.moe_capacity_factor = factor;
  }
  if (row.has("moe_pad_to_capacity")) t.moe_pad_to_capacity = row.flag("moe_pad_to_capacity");
  if (row.has("moe_dispatcher")) t.moe_dispatcher = row.choice("moe_dispatcher", choices::kMoeDispatcher);
}

RunRecord record(const Row& row, const CalibrateRequest& defaults) {
  RunRecord rec;
  rec.label = row.where;
  EstimateRequest& r = rec.request;
  r.training.precision = row.has("precision") ? row.text("precision") : defaults.precision.value_or("bf16");
  r.layout.recompute = defaults.recompute.value_or("none");
  r.layout.attention = defaults.attention.value_or("flash");
  if (row.has("seq")) r.training.seq_len = row.integer("seq");
  if (row.has("micro_batch")) r.training.micro_batch = row.integer("micro_batch");
  if (row.has("global_batch")) r.training.global_batch = row.integer("global_batch");
  set_model(row, r);
  r.layout.zero = defaults.zero;
  set_layout(row, r);
  if (!row.has("sequence_parallel")) r.layout.sequence_parallel = defaults.sequence_parallel && r.layout.tp > 1;
  r.cluster.system = row.has("system") ? std::optional(row.text("system")) : defaults.cluster.system;
  if (row.has("nodes")) r.cluster.nodes = row.integer("nodes");
  r.hardware.gpu = row.has("gpu") ? std::optional(row.text("gpu")) : defaults.gpu;
  r.hardware.catalog = defaults.catalog;
  r.timing.tp_overlap = row.has("tp_overlap") ? row.flag("tp_overlap") : defaults.tp_overlap;
  if (row.has("dp_overlap")) r.timing.dp_overlap = row.flag("dp_overlap");
  if (row.has("pp_overlap")) r.timing.pp_overlap = row.flag("pp_overlap");
  if (row.has("grad_nan_check")) r.training.grad_nan_check = row.flag("grad_nan_check");
  if (row.has("tp_overlap_sms")) r.timing.tp_overlap_sms = row.number("tp_overlap_sms", "a number of SMs >= 0");
  if (row.has("grad_dtype")) r.training.grad_dtype = row.choice("grad_dtype", choices::kDType);
  if (row.has("dropout")) r.training.dropout = row.probability("dropout");
  if (row.has("loss")) r.training.loss = row.choice("loss", choices::kLoss);
  set_moe_options(row, r.training);
  r.timing.perf = defaults.perf;
  if (row.has("step_ms")) rec.step_s = row.seconds("step_ms", 1e-3);
  else if (row.has("step_s")) rec.step_s = row.seconds("step_s", 1.0);
  else throw InputError(row.where, "no step time", "a step_ms or step_s value");
  return rec;
}

// The header: the first line that is not a comment. A line starting with '#' is the header when its first cell
// names a column (the vTrain table's "# GPUs,...").
std::optional<std::vector<std::string>> header_of(const std::string& line, const std::string& where) {
  const bool comment = line[0] == '#';
  std::vector<std::string> names = cells(line);
  if (comment && column_names().count(normalized(names[0])) == 0) return std::nullopt;
  std::vector<std::string> keys;
  for (const std::string& n : names) {
    const auto it = column_names().find(normalized(n));
    if (it == column_names().end()) throw InputError(where + ": column '" + n + "'", "unknown column", accepted_columns());
    keys.push_back(it->second);
  }
  if (std::count(keys.begin(), keys.end(), "step_ms") + std::count(keys.begin(), keys.end(), "step_s") != 1)
    throw InputError(where, "the header " + line, "one step time column: step_ms or step_s (docs/estimate.md)");
  return keys;
}

}  // namespace

std::vector<RunRecord> read_runs_csv(const FileInput& file, const CalibrateRequest& defaults) {
  std::string text = file_text(file, "runs");
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a byte-order mark
  std::istringstream in(text);
  std::vector<std::string> keys, headers;
  std::vector<RunRecord> runs;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", file.path, number);
    if (keys.empty()) {
      if (auto k = header_of(line, where)) {
        keys = *k;
        headers = cells(line);
      }
      continue;
    }
    if (line[0] == '#') continue;
    const std::vector<std::string> values = cells(line);
    if (values.size() != keys.size())
      throw InputError(where, fmt::format("{} values", values.size()), fmt::format("{} values, one per column", keys.size()));
    Row row;
    row.where = where;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (!keys[i].empty()) row.values[keys[i]] = {values[i], headers[i]};
    runs.push_back(record(row, defaults));
  }
  if (keys.empty()) throw InputError(file.path, "no header line", "a CSV header naming the columns: " + accepted_columns());
  if (runs.empty()) throw InputError(file.path, "no runs", "one line per measured run below the header");
  return runs;
}

}  // namespace gpuplan::api::detail
