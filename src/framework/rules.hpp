// The rules each training framework enforces between its options, as one table with the source of every rule: what
// a layout must satisfy before Megatron-LM, DeepSpeed, torchtitan or NeMo will run it, and the values a framework
// changes without saying so. The search proposes only layouts that keep them; memory and estimate reject a layout
// that breaks one, naming the rule.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/memory.hpp"

namespace gpuplan::framework {

// The framework's release its options and rules follow, with the commit they were read from.
struct Release {
  Framework framework;
  std::string_view name;      // "Megatron-LM"
  std::string_view version;   // "core 0.15 (main @ d98e8a64ddf3, 2026-08-22)"
};
const Release& release_of(Framework framework);
std::string_view name_of(Framework framework);   // "megatron"

// What a rule looks at: the model (absent with a bare parameter count), the training setup and the layout with
// every degree resolved (dp, etp filled in).
struct JobFacts {
  const ModelConfig* model = nullptr;
  const TrainingConfig* training = nullptr;
  const Layout* layout = nullptr;
  bool tp_overlap = false;    // TP communication overlapped with GEMMs (estimate and plan)
};

// Which choices a rule constrains: the search checks `shape` rules for each (tp, cp, pp, vpp, ep, etp, dp,
// micro-batch) and `states` rules for each ZeRO stage and offload of a shape.
enum class RuleLevel { shape, states };

struct Rule {
  Framework framework;
  RuleLevel level;
  std::string_view field;     // the request field it is about ("layout.tp")
  std::string_view text;      // what the framework requires, in our words
  std::string_view source;    // path:line at the release's commit
  // What the job gives that breaks the rule ("tp 3 with 32 heads"); nothing when it keeps it.
  std::optional<std::string> (*broken)(const JobFacts& job);
};

// Every rule of every framework. NeMo runs Megatron-Core, so Megatron-LM's rules apply to NeMo as well.
std::span<const Rule> rules();
bool applies(const Rule& rule, Framework framework);

// The first rule of `framework` (at `level`, or any level) the job breaks; nullptr when it keeps them all.
const Rule* first_broken(Framework framework, const JobFacts& job, std::optional<RuleLevel> level = std::nullopt);

// InputError when the job breaks a rule of its framework: the rule's field, what was given, and the rule with its
// source as what is accepted.
void check_job(const JobFacts& job);

// Values the framework changes without an error (Megatron-LM switches sequence parallelism off at TP 1), applied
// to `layout`; each change described with its source.
std::vector<std::string> apply_rewrites(Framework framework, Layout& layout);

}  // namespace gpuplan::framework
