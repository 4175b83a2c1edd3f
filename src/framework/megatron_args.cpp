// Parsing pretrain_gpt.py's arguments as argparse does, with Megatron-LM's flag table.
#include "framework/megatron_args.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "framework/reading.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan::framework {

namespace {

bool is_flag(const std::string& word) { return word.size() > 2 && word.rfind("--", 0) == 0; }

// argparse takes a word that starts with '-' and is not a negative number as the next option.
bool is_option_like(const std::string& word) {
  if (word.empty() || word[0] != '-') return false;
  return !whole_number(word) && word.find_first_not_of("-0123456789.e") != std::string::npos;
}

}  // namespace

namespace {

// A flag that takes one value: the value, and the words after it that bash split off the same array element
// ("--step-batch-size-schedule "0:16 2.4B:320"" expanded unquoted): taken as one value, with the split reported.
std::size_t take_value(const std::vector<std::pair<std::string, int>>& words, std::size_t i, MegatronArg& arg,
                       LaunchConfig& out) {
  arg.value = words[++i].first;
  std::size_t extra = 0;
  while (i + 1 < words.size() && words[i + 1].second == words[i].second && words[i].second > 0 &&
         !is_option_like(words[i + 1].first)) {
    arg.value += " " + words[++i].first;
    ++extra;
  }
  if (extra > 0)
    out.issues.push_back(fmt::format("line {}: {} takes one value, but the unquoted array expansion splits '{}' "
                                     "into {} words and argparse rejects the rest (quote the expansion: \"${{ARGS[@]}}\")",
                                     arg.line, arg.flag, arg.value, extra + 1));
  return i;
}

}  // namespace

MegatronArgs::MegatronArgs(const std::vector<std::pair<std::string, int>>& words, LaunchConfig& out) {
  // Each suggestion compares the name with 1,500 flags; past a few unknown flags the script is not a Megatron-LM
  // one, and the rest are listed without one.
  constexpr int kSuggestedFlags = 8;
  int suggested = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto& [word, line] = words[i];
    if (!is_flag(word)) {
      if (!word.empty()) out.errors.push_back(fmt::format("line {}: unexpected argument '{}' (argparse rejects it)", line, word));
      continue;
    }
    const std::size_t equals = word.find('=');
    const std::string name = word.substr(0, equals);
    const MegatronFlag* flag = megatron_flag(name);
    if (flag == nullptr) {
      const std::string hint = suggested++ < kSuggestedFlags ? did_you_mean(name, megatron_flag_names()) : "";
      out.errors.push_back(fmt::format("line {}: {} is not an argument of pretrain_gpt.py{}; argparse stops with "
                                       "\"unrecognized arguments\" (prefixes are not accepted)",
                                       line, name, hint.empty() ? "" : " (" + hint + ")"));
      if (equals == std::string::npos && i + 1 < words.size() && !is_option_like(words[i + 1].first)) ++i;
      continue;
    }
    MegatronArg arg{name, "", {}, line};
    if (flag->kind == MegatronFlag::Kind::flag) {
      arg.value = flag->sets ? "true" : "false";
    } else if (equals != std::string::npos) {
      arg.value = word.substr(equals + 1);
      arg.items.push_back(arg.value);
    } else if (flag->kind == MegatronFlag::Kind::value) {
      // No value: most often a variable the script leaves to its caller ("--tokenizer-model ${TOKENIZER_MODEL}").
      // Kept with an empty value: that the flag is there still says something (--vocab-file: GPT-2 BPE files).
      if (i + 1 >= words.size() || is_option_like(words[i + 1].first)) {
        if (flag->relevant)
          out.not_understood.push_back(fmt::format("line {}: {} has no value (a variable the script leaves unset)", line, name));
        by_dest_[flag->dest] = std::move(arg);
        continue;
      }
      i = take_value(words, i, arg, out);
    } else {
      while (i + 1 < words.size() && !is_option_like(words[i + 1].first)) arg.items.push_back(words[++i].first);
      for (const auto& item : arg.items) arg.value += (arg.value.empty() ? "" : " ") + item;
    }
    if (!flag->choices.empty() && flag->kind == MegatronFlag::Kind::value &&
        std::find(flag->choices.begin(), flag->choices.end(), arg.value) == flag->choices.end())
      out.errors.push_back(fmt::format("line {}: {} '{}' is not one of its choices ({})", line, name, arg.value,
                                       fmt::join(flag->choices, ", ")));
    by_dest_[flag->dest] = std::move(arg);   // the last occurrence wins, as in argparse
  }
}

const MegatronArg* MegatronArgs::get(const std::string& dest) {
  const auto found = by_dest_.find(dest);
  if (found == by_dest_.end()) return nullptr;
  read_.insert(dest);
  return &found->second;
}

std::string MegatronArgs::where(const std::string& dest) {
  const MegatronArg* arg = get(dest);
  if (arg == nullptr) return dest;
  const MegatronFlag* flag = megatron_flag(arg->flag);
  const bool bare = flag != nullptr && flag->kind == MegatronFlag::Kind::flag;
  const std::string place = arg->line > 0 ? fmt::format("line {}: ", arg->line) : std::string();
  return bare ? place + arg->flag : fmt::format("{}{} {}", place, arg->flag, arg->value);
}

std::vector<const MegatronArg*> MegatronArgs::unread_relevant() const {
  std::vector<const MegatronArg*> out;
  for (const auto& [dest, arg] : by_dest_) {
    const MegatronFlag* flag = megatron_flag(arg.flag);
    if (flag != nullptr && flag->relevant && read_.count(dest) == 0) out.push_back(&arg);
  }
  return out;
}

}  // namespace gpuplan::framework
