// Launch configurations: what a Megatron-LM launch script, a DeepSpeed ds_config.json, a torchtitan TOML job or a
// NeMo recipe sets, read into gpuplan's request options; and the files that launch a layout gpuplan chose.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/memory.hpp"

namespace gpuplan::framework {

// What one launch configuration sets, as the flat options of `gpuplan estimate` ("tp": 8, "seq_len": 2048, ...),
// grouped by what the questions take from it: `plan --from` keeps the model, the training and the GPU count and
// searches the layout itself.
struct LaunchConfig {
  Framework framework = Framework::megatron;
  std::string format;                         // "Megatron-LM launch script"
  nlohmann::json model = nlohmann::json::object();      // model, or model overrides
  nlohmann::json training = nlohmann::json::object();   // seq_len, micro_batch, global_batch, precision, ...
  nlohmann::json layout = nlohmann::json::object();     // tp, pp, ..., zero, recompute, offload
  nlohmann::json timing = nlohmann::json::object();     // tp_overlap, no_dp_overlap
  std::optional<std::int64_t> gpus;           // the world size the file sets up
  std::optional<std::int64_t> nodes;
  // Sequences each data-parallel replica takes per step, where the file gives no global batch: the global batch is
  // this x dp once the GPU count is known (torchtitan's global_batch_size -1).
  std::optional<std::int64_t> batch_per_replica;
  std::vector<std::string> understood;        // "line 52: --tensor-model-parallel-size 8 -> tp 8"
  std::vector<std::string> not_understood;    // options that matter for memory or time and gpuplan does not model
  std::vector<std::string> issues;            // what the framework rejects as written, given the file's GPU count
  // What makes the file unreadable as written: an option the framework does not have, a value not of its type or
  // choices, options that conflict. `--from` stops with the first (exit status 2); the library reports them all.
  std::vector<std::string> errors;
};

// The report line of a Megatron-LM script that builds its model without stating the vocabulary: a request that
// reads such a file goes on only with --vocab (or --model) given beside it, and its report then drops the line.
inline constexpr std::string_view kVocabularyNotStated =
    "the vocabulary: neither --vocab-size nor a tokenizer of known size; give --vocab";

// Reads a launch configuration; the format follows from the file name and its text (detect_format). InputError
// names the file and line for text no reader accepts.
LaunchConfig read_launch_config(std::string_view path, std::string_view text);

// Which reader a file goes to: a ds_config (JSON), a torchtitan job (TOML), a NeMo recipe (Python) or override list,
// or a Megatron-LM launch script (shell).
Framework detect_format(std::string_view path, std::string_view text);

// The readers, one per framework.
LaunchConfig read_megatron_script(std::string_view path, std::string_view text);
LaunchConfig read_deepspeed_config(std::string_view path, std::string_view text);
LaunchConfig read_torchtitan_toml(std::string_view path, std::string_view text);
LaunchConfig read_nemo(std::string_view path, std::string_view text);

// ---------------------------------------------------------------------------------------------------------------
// Writing

// A layout gpuplan chose, with what it predicts: everything an emitter writes.
struct EmitJob {
  std::string model_name;                     // catalog name or file the model came from
  ModelConfig model;
  TrainingConfig training;
  Layout layout;                              // every degree resolved
  bool tp_overlap = false;
  bool dp_overlap = true;
  bool pp_overlap = true;                     // overlap_p2p_comm, which both frameworks turn on with virtual stages
  Overheads overheads;                        // DeepSpeed's ZeRO bucket sizes among them
  std::int64_t gpus_per_node = 8;
  std::int64_t nodes = 1;
  double step_s = 0;                          // predicted
  std::int64_t memory_bytes = 0;              // predicted peak of the worst GPU
  Framework priced_under = Framework::megatron;   // the framework step_s and memory_bytes were predicted for

  // The dtype the gradients accumulate in: the one the request gave, or the framework's (gradient_dtype).
  DType gradients() const { return gradient_dtype(training, layout.framework, layout.zero); }
};

struct LaunchFile {
  std::string name;                           // "train_megatron.sh"
  std::string text;
};

// The files that launch `job` under its framework (job.layout.framework). InputError when the framework cannot
// run the job as it stands (a model torchtitan has no flavour for, a layout it rejects).
std::vector<LaunchFile> emit_launch(const EmitJob& job);

}  // namespace gpuplan::framework
