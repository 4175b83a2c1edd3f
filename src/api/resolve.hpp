// From a request as the user wrote it to the models' inputs: every value checked, every error naming its request
// field. One rule for each kind of input, whichever question asks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::api::detail {

// The text of a file the host read into the request; an InputError naming `field` when it was not read.
const std::string& file_text(const FileInput& file, std::string_view field);

// A topology output as parse_topology reads it; its errors that name no field name the file (`path`) instead.
Topology parse_topology_output(const std::string& text, const std::string& path);

// The model with its overrides applied and validated.
ModelConfig resolve_model(const ModelSource& source, const ModelOverrides& overrides);

// The built-in hardware catalog (shared, not copied), or a copy with the request's catalog files merged in.
std::shared_ptr<const HardwareCatalog> resolve_catalog(const std::vector<FileInput>& files, std::string_view field);

// The job of memory and estimate: model (or parameter count), training, layout, overheads, capacity. The layout
// is checked (resolve_layout) before anything is estimated.
MemoryInputs resolve_memory_inputs(const ModelSource& model, const ModelOverrides& overrides,
                                   const std::optional<std::string>& params, const TrainingOptions& training,
                                   const LayoutOptions& layout, const HardwareOptions& hardware,
                                   const HardwareCatalog& catalog);
TrainingConfig resolve_training(const TrainingOptions& training);
// DeepSpeed's ZeRO buffer sizes the request gives (a ds_config read by --from, or the options) replace the defaults
// in `overheads`; under another framework they are an InputError, as that framework has no such setting.
void apply_zero_buckets(const TrainingOptions& training, Framework framework, Overheads& overheads);
// data/overheads.json's figures with the request's own (cuda_context, nccl_per_comm, allocator_factor, overheads).
Overheads resolve_overheads(const HardwareOptions& hardware);
// Expert parallelism needs experts: an InputError naming `field` when a dense model is given an expert degree
// other than 1 (a launch file's etp 1 is torchtitan's default), or with `any_value` any degree at all (a plan
// filter on a degree a dense model does not have would silently filter something else).
void check_expert_degree(const ModelConfig& model, std::string_view field, std::int64_t degree, bool any_value);
// The saved-tensor accounting a framework's modules follow when --impl does not say.
Impl default_impl(Framework framework);

// One host's memory and NVMe: the system's (null: none), with gpus_per_node GPUs (0: the system's), split among
// the system's hosts_per_node, then hardware.host_memory and hardware.nvme_capacity in their place when given.
// InputError when a capacity is given but nothing says how many GPUs share it.
NodeStorage resolve_node_storage(const SystemSpec* system, std::int64_t gpus_per_node, const HardwareOptions& hardware);

// The machines of a job. `ranks` and `ranks_per_node` size the default node count (ranks_per_node 0: every GPU of
// a node). `gpu` replaces the system's GPU.
struct ResolvedCluster {
  Fabric fabric;
  GpuSpec gpu;                 // the GPU that computes: the system's, or the one asked for
  bool gpu_known = true;       // false for a topology output without `gpu`: the links are known, the GPU is not
  std::string gpu_guess;       // then what the links suggest ("--gpu h100-sxm-80gb (inferred from NV18 ...)"), or ""
  SystemSpec system;           // host memory and NVMe of one node (empty for a topology output)
  std::string origin;          // "--system dgx-a100 --nodes 4", or the file
  std::string name;            // "4x dgx-a100"
};
// The compute constants of `gpu` with the user's `perf` files over them, and `fabric` with the collective tiers of
// `comm` (the files estimate and plan take as timing.perf and timing.comm_calibration).
PerfConstants apply_calibration_files(const std::vector<FileInput>& perf, const std::optional<FileInput>& comm,
                                      const GpuSpec& gpu, Fabric& fabric);

// InputError naming `gpu` when the cluster's GPU is not known (a topology output given without one): the compute
// needs it; the message offers what the topology's links suggest.
void require_known_gpu(const ResolvedCluster& cluster);

ResolvedCluster resolve_cluster(const ClusterOptions& cluster, const HardwareCatalog& catalog,
                                const std::optional<std::string>& gpu, std::int64_t ranks,
                                std::int64_t ranks_per_node = 0);

// What `gpuplan estimate` prices for a request: the job, GPU, fabric and the constants of data/perf.json with the
// request's --perf overlays.
EstimateInputs estimate_job_inputs(const EstimateRequest& request);

}  // namespace gpuplan::api::detail
