// Which reader a launch configuration goes to, and the checks every reader's result gets: the rules between the
// world size, the parallel degrees and the batch that each framework enforces at start-up.
#include <fmt/format.h>

#include "framework/launch.hpp"
#include "framework/reading.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string_view first_word(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return {};
  const std::size_t end = text.find_first_of(" \t\r\n", start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

std::int64_t degree(const nlohmann::json& layout, const char* key, std::int64_t fallback = 1) {
  return layout.contains(key) && layout.at(key).is_number_integer() ? layout.at(key).get<std::int64_t>() : fallback;
}

// World size against the degrees and the batch, as the framework checks them when it starts.
void check_world(LaunchConfig& c) {
  if (!c.gpus || *c.gpus <= 0) {
    if (c.batch_per_replica)
      c.not_understood.push_back(fmt::format("the global batch: {} sequences per data-parallel replica, and the file "
                                             "does not say how many GPUs; give --global-batch",
                                             *c.batch_per_replica));
    return;
  }
  const std::int64_t tp = degree(c.layout, "tp"), pp = degree(c.layout, "pp"), cp = degree(c.layout, "cp");
  const std::int64_t ep = degree(c.layout, "ep");
  const std::int64_t etp = degree(c.layout, "etp", c.framework == Framework::torchtitan ? 1 : tp);
  const std::int64_t micro = degree(c.training, "micro_batch");
  for (const std::int64_t count : {tp, pp, cp, ep, etp})
    if (!sane_count(count, 65536)) return;   // the request's bounds report it
  if (!sane_count(*c.gpus) || !sane_count(micro)) return;
  const std::int64_t model_parallel = tp * pp * cp;
  if (model_parallel <= 0 || *c.gpus % model_parallel != 0) {
    c.issues.push_back(fmt::format("tp x pp x cp = {} does not divide the {} GPUs the file launches; it needs a "
                                   "multiple of {} GPUs",
                                   model_parallel, *c.gpus, model_parallel));
    return;
  }
  const std::int64_t dp = *c.gpus / model_parallel;
  if (c.batch_per_replica && sane_count(*c.batch_per_replica) && !c.training.contains("global_batch")) {
    c.training["global_batch"] = *c.batch_per_replica * dp;
    c.understood.push_back(fmt::format("local batch {} x dp {} -> global_batch {}", *c.batch_per_replica, dp,
                                       *c.batch_per_replica * dp));
  }
  if (ep > 1 && runs_megatron_core(c.framework) && *c.gpus % (etp * ep * pp) != 0)
    c.issues.push_back(fmt::format("the expert grid etp x ep x pp = {} x {} x {} = {} does not divide the {} GPUs "
                                   "(megatron/core/parallel_state.py:874-884); it needs a multiple of {} GPUs",
                                   etp, ep, pp, etp * ep * pp, *c.gpus, etp * ep * pp));
  if (c.training.contains("global_batch") && c.training.at("global_batch").is_number_integer()) {
    const std::int64_t global = c.training.at("global_batch").get<std::int64_t>();
    if (global % (micro * dp) != 0)
      c.issues.push_back(fmt::format("the global batch {} is not divisible by micro batch {} x dp {}", global, micro, dp));
  }
}

}  // namespace

Framework detect_format(std::string_view path, std::string_view text) {
  if (ends_with(path, ".json")) return Framework::deepspeed;
  if (ends_with(path, ".toml")) return Framework::torchtitan;
  if (ends_with(path, ".py")) return Framework::nemo;
  const std::string_view word = first_word(text);
  if (!word.empty() && word.front() == '{') return Framework::deepspeed;
  if (!word.empty() && word.front() == '[') return Framework::torchtitan;
  if (word == "nemo" || text.find("--factory") != std::string_view::npos || text.find("def trainer(") != std::string_view::npos ||
      text.find("trainer.strategy.") != std::string_view::npos)
    return Framework::nemo;
  return Framework::megatron;
}

LaunchConfig read_launch_config(std::string_view path, std::string_view text) {
  if (text.find('\0') != std::string_view::npos)
    throw InputError(std::string(path), "binary content (a NUL byte)", "a launch script, ds_config.json, TOML or NeMo recipe");
  // NeMo 1's launcher and Megatron-Bridge's overrides are YAML; read as a shell script, such a file would only be
  // said to lack a pretrain_*.py command.
  if (ends_with(path, ".yaml") || ends_with(path, ".yml"))
    throw InputError(std::string(path), "a YAML config (NeMo launcher or Megatron-Bridge), which gpuplan does not read",
                     "a Megatron-LM launch script, a DeepSpeed ds_config.json, a torchtitan TOML or a NeMo 2 recipe "
                     "(.py); give the layout as options instead");
  LaunchConfig config;
  switch (detect_format(path, text)) {
    case Framework::deepspeed: config = read_deepspeed_config(path, text); break;
    case Framework::torchtitan: config = read_torchtitan_toml(path, text); break;
    case Framework::nemo: config = read_nemo(path, text); break;
    case Framework::megatron: config = read_megatron_script(path, text); break;
  }
  check_world(config);
  return config;
}

}  // namespace gpuplan::framework
