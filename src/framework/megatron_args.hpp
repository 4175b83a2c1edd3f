// The arguments of a pretrain_gpt.py command line, parsed as Megatron-LM's argparse parser parses them (every
// flag looked up in data/frameworks/megatron_flags.json: no prefixes, store_true flags take no value, nargs lists
// run to the next flag), and their conversion into request options.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "framework/launch.hpp"

namespace gpuplan::framework {

struct MegatronArg {
  std::string flag;                    // as written: "--tensor-model-parallel-size"
  std::string value;                   // the value ("8"), "true"/"false" for flags, the items joined for lists
  std::vector<std::string> items;      // list flags
  int line = 0;
};

class MegatronArgs {
 public:
  // Parses the words after the script; unknown flags and missing values become issues of `out`.
  MegatronArgs(const std::vector<std::pair<std::string, int>>& words, LaunchConfig& out);

  // The argument with this destination ("tensor_model_parallel_size"), marked as read; nullptr when not given.
  const MegatronArg* get(const std::string& dest);
  bool has(const std::string& dest) { return get(dest) != nullptr; }
  // "line 52: --tensor-model-parallel-size 8"
  std::string where(const std::string& dest);
  // Given arguments that matter for memory, layout or step time and were not read.
  std::vector<const MegatronArg*> unread_relevant() const;

 private:
  std::map<std::string, MegatronArg> by_dest_;
  std::set<std::string> read_;
};

// Fills `out` from the arguments: layout, batch, precision, recomputation, states, overlap and the model (as
// Megatron-LM's own argument names, model_type "megatron"). `origin` names the model.
void convert_megatron_args(MegatronArgs& args, const std::string& origin, LaunchConfig& out);

}  // namespace gpuplan::framework
