// A Megatron-LM launch script read into request options: the shell run as bash would (shell_script.hpp), the
// command that runs pretrain_*.py found (directly, through torchrun, deepspeed or srun, or inside a string a job
// script runs), its launcher's GPUs and nodes, and its arguments parsed as pretrain_gpt.py parses them.
#include <fmt/format.h>

#include "framework/megatron_args.hpp"
#include "framework/reading.hpp"
#include "framework/shell_script.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

using Words = std::vector<std::pair<std::string, int>>;

struct Launch {
  Words launcher;      // the words before the training script: torchrun and its options
  Words arguments;     // the words after it
  int line = 0;
};

bool is_training_script(const std::string& word) {
  const std::size_t slash = word.rfind('/');
  const std::string name = slash == std::string::npos ? word : word.substr(slash + 1);
  return name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0 && name.rfind("pretrain", 0) == 0;
}

std::optional<Launch> launch_in(const Words& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!is_training_script(words[i].first)) continue;
    Launch launch;
    launch.launcher.assign(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(i));
    launch.arguments.assign(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
    launch.line = words[i].second;
    return launch;
  }
  return std::nullopt;
}

// A command string (bash -c "...", a variable holding one): its words up to the end of the command.
Words split_command(const std::string& text, int line) {
  Words out;
  std::string word;
  for (const char c : text) {
    const bool separator = c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '|' || c == '&';
    if (!separator) {
      word += c;
      continue;
    }
    if (!word.empty()) out.emplace_back(std::move(word), line);
    word.clear();
    if (c == ';' || c == '\n' || c == '|' || c == '&') {
      if (launch_in(out)) return out;
      out.clear();
    }
  }
  if (!word.empty()) out.emplace_back(std::move(word), line);
  return out;
}

std::optional<Launch> find_launch(const ShellScript& script) {
  for (const ShellCommand& command : script.commands) {
    Words words;
    for (const ShellWord& w : command.words) words.emplace_back(w.text, w.line);
    if (auto launch = launch_in(words)) return launch;
    for (const ShellWord& w : command.words)   // bash -c "...": the command is one word
      if (w.text.find(".py") != std::string::npos)
        if (auto launch = launch_in(split_command(w.text, w.line))) return launch;
  }
  for (const auto& [name, value] : script.variables)   // a command kept in a variable for srun or a job script
    if (value.find(".py") != std::string::npos)
      if (auto launch = launch_in(split_command(value, 0))) return launch;
  return std::nullopt;
}

std::optional<std::int64_t> launcher_value(const Words& launcher, std::initializer_list<const char*> names) {
  for (std::size_t i = 0; i < launcher.size(); ++i)
    for (const char* name : names) {
      const std::string& word = launcher[i].first;
      if (word == name && i + 1 < launcher.size()) return whole_number(launcher[i + 1].first);
      const std::string prefix = std::string(name) + "=";
      if (word.rfind(prefix, 0) == 0) return whole_number(word.substr(prefix.size()));
    }
  return std::nullopt;
}

// GPUs per node and nodes from torchrun or the deepspeed launcher, else from the job script's #SBATCH lines.
void read_world(const Launch& launch, const ShellScript& script, LaunchConfig& out) {
  auto per_node = launcher_value(launch.launcher, {"--nproc_per_node", "--nproc-per-node", "--num_gpus"});
  auto nodes = launcher_value(launch.launcher, {"--nnodes", "--num_nodes"});
  if (!nodes && script.sbatch.count("nodes") != 0) nodes = whole_number(script.sbatch.at("nodes"));
  if (!per_node && script.sbatch.count("gpus-per-node") != 0) per_node = whole_number(script.sbatch.at("gpus-per-node"));
  if (!per_node && script.sbatch.count("ntasks-per-node") != 0) per_node = whole_number(script.sbatch.at("ntasks-per-node"));
  if (!per_node || !sane_count(*per_node, 1'000'000)) {
    out.not_understood.push_back("the GPUs per node: the launcher does not say; give --gpus");
    return;
  }
  const std::int64_t node_count = nodes && sane_count(*nodes, 1'000'000) ? *nodes : 1;
  out.nodes = node_count;
  out.gpus = *per_node * node_count;
  out.understood.push_back(fmt::format("launcher: {} GPUs per node x {} nodes -> gpus {}", *per_node, node_count, *out.gpus));
}

// Megatron-LM needs CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP on GPUs before Blackwell (arguments.py:1452-1479).
void check_connections(const ShellScript& script, LaunchConfig& out) {
  const bool split = out.layout.value("tp", std::int64_t{1}) > 1 || out.layout.value("cp", std::int64_t{1}) > 1;
  const auto found = script.variables.find("CUDA_DEVICE_MAX_CONNECTIONS");
  if (split && (found == script.variables.end() || found->second != "1") && out.layout.value("zero", std::int64_t{0}) < 2)
    out.issues.push_back("tp > 1 or cp > 1 needs CUDA_DEVICE_MAX_CONNECTIONS=1 on GPUs before Blackwell "
                         "(megatron/training/arguments.py:1452-1479)");
}

}  // namespace

LaunchConfig read_megatron_script(std::string_view path, std::string_view text) {
  const ShellScript script = read_shell_script(text, path);
  const std::optional<Launch> launch = find_launch(script);
  if (!launch)
    throw InputError(std::string(path), "no command that runs pretrain_*.py",
                     "a Megatron-LM launch script (torchrun ... pretrain_gpt.py --flags)");
  LaunchConfig out;
  out.framework = Framework::megatron;
  out.format = "Megatron-LM launch script";
  out.training["framework"] = "megatron";
  MegatronArgs args(launch->arguments, out);
  convert_megatron_args(args, std::string(path), out);
  read_world(*launch, script, out);
  check_connections(script, out);
  return out;
}

}  // namespace gpuplan::framework
