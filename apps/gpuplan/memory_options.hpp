#pragma once
// Options of `gpuplan memory`, shared by every command that estimates memory (estimate, plan).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "gpuplan/memory.hpp"
#include "model_options.hpp"

namespace gpuplan::cli {

struct MemoryOptions {
  ModelOptions model;
  std::string params;                 // --params N (model states only)
  std::int64_t seq_len = 2048;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 0;
  std::string precision = "bf16";
  std::string optimizer = "adam";
  std::string grad_dtype = "fp32";
  bool no_master_weights = false;
  double dropout = 0.0;
  bool fused_loss = false;
  std::int64_t gpus = -1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = -1, dp = -1;  // -1: not given
  bool sequence_parallel = false;
  int zero = 0;
  std::string recompute = "none";
  std::int64_t recompute_layers = -1;
  std::string offload = "none";
  std::string offload_target = "cpu";
  std::string pp_schedule = "1f1b";
  std::string attention = "flash";
  std::string impl = "megatron";
  std::int64_t first_stage_layers = -1, last_stage_layers = -1;
  std::string gpu;
  std::string gpu_memory;
  std::vector<std::string> catalog_files;
  std::string cuda_context, nccl_per_comm;
  double allocator_factor = 0;
  bool no_overheads = false;

  // Registers every option on `cmd`; the object must outlive parsing (hold it in a shared_ptr).
  void add_to(CLI::App& cmd);
  // Builds the inputs of the memory model; throws InputError naming the option at fault.
  MemoryInputs resolve() const;
};

}  // namespace gpuplan::cli
