#pragma once
// The questions gpuplan answers, as requests: what a user gives, named as the command line names it. Every front
// end (the gpuplan program, the Python module, the web page) fills one of these and hands it to gpuplan::api::run.
// Each field has an option name ("tp": --tp on the command line, tp= in Python, a key of flat JSON) and a path in
// nested JSON ("layout.tp"), the name errors give; gpuplan::api::request_options lists them with their help.
// Values stay as the user wrote them (text for choices and sizes); the library checks them all.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuplan::api {

// A file the user named, or its text. The core reads no files: gpuplan_host's load_files fills `text` from
// `path`; a web page or a caller that has the text sets it directly (`path` then only names it in messages).
struct FileInput {
  std::string path;
  std::optional<std::string> text;
  bool operator==(const FileInput&) const = default;
};

// A model: a catalog name ("llama-3.1-70b"), a path to a Hugging Face config.json or a folder holding one, or
// the config itself (`config`: its JSON text, from a file the host read, a pasted config or a Python dict).
struct ModelSource {
  std::string name_or_path;
  std::optional<std::string> config;
  bool given() const { return !name_or_path.empty() || config.has_value(); }
  bool operator==(const ModelSource&) const = default;
};

// Single architecture fields that replace the model's.
struct ModelOverrides {
  std::optional<std::int64_t> layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, max_positions;
  std::optional<std::string> mlp;              // gelu | swiglu
  std::optional<std::string> norm;             // layernorm | rmsnorm
  std::optional<bool> tied_embeddings;
  std::optional<std::int64_t> experts, top_k, expert_ffn_hidden;
  bool operator==(const ModelOverrides&) const = default;
};

struct TrainingOptions {
  std::int64_t seq_len = 2048;
  std::int64_t micro_batch = 1;
  std::optional<std::int64_t> global_batch;    // sequences per step; none: micro-batch x dp
  std::string precision = "bf16";
  std::string optimizer = "adam";
  std::string grad_dtype;   // empty: the framework's (gradient_dtype in gpuplan/memory.hpp)
  bool master_weights = true;
  double dropout = 0.0;
  std::string loss = "unfused";                // unfused | fused-te | fused-native | chunked
  bool fused_loss = false;                     // older name of loss "chunked"
  std::optional<std::int64_t> vocab_divisible_by;  // none: 128 with the megatron implementation, else 1
  std::string te_version = "2.11";             // Transformer Engine release, MAJOR.MINOR
  std::string megatron_version = "0.15";       // Megatron-Core release, MAJOR.MINOR
  bool grad_nan_check = true;                  // Megatron-LM's check of the gradients for NaN before reducing them
  double moe_imbalance = 1.0;
  std::optional<double> moe_capacity_factor;   // none: dropless
  bool moe_pad_to_capacity = false;
  bool fp8_param_gather = false;
  std::string moe_dispatcher = "alltoall";     // alltoall | flex (DeepEP or HybridEP)
  std::string framework = "megatron";          // megatron | deepspeed | torchtitan | nemo: the layouts it accepts
  bool compile = false;                        // the model runs under torch.compile
  // DeepSpeed's ZeRO buffer sizes in elements, as its zero_optimization keys; none: DeepSpeed's defaults
  // (data/overheads.json).
  std::optional<double> reduce_bucket_size, allgather_bucket_size;
  std::optional<double> stage3_prefetch_bucket_size, stage3_max_live_parameters;
  bool operator==(const TrainingOptions&) const = default;
};

// A launch configuration to start from, and the framework to write one for.
struct LaunchOptions {
  // A Megatron-LM launch script, a ds_config.json, a torchtitan TOML or a NeMo recipe (or override list): its
  // settings fill the request; options given beside it win. Applied by from_json, which sees what was given.
  std::optional<FileInput> from;
  std::optional<std::string> emit;             // megatron | deepspeed | torchtitan | nemo: write its launch files
  std::optional<std::string> out;              // folder the host writes them to (none: they are in the result only)
  // The file's settings that options given beside it changed ("seq_len 4096 instead of the file's 512"): filled by
  // from_json, which sees both; not an option itself.
  std::vector<std::string> changed_beside;
  // The request fields ("layout.gpus") whose value is the file's, no option beside it giving one: an error about
  // one of them says it comes from the file. Filled by from_json; not an option itself.
  std::vector<std::string> file_fields;
  bool operator==(const LaunchOptions&) const = default;
};

struct LayoutOptions {
  std::optional<std::int64_t> gpus;            // none: tp x pp x cp x dp
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  std::optional<std::int64_t> etp, dp;         // none: tp; gpus / (tp x pp x cp)
  std::string cp_comm_type = "p2p";            // p2p | a2a | all_gather | a2a+p2p (Megatron-LM's --cp-comm-type)
  std::optional<std::int64_t> cp_a2a_size;     // a2a+p2p: ranks of one all-to-all group
  bool sequence_parallel = false;
  std::optional<std::int64_t> zero;            // none: the framework's default (3 under torchtitan, FSDP2; else 0)
  std::string recompute = "none";
  std::optional<std::int64_t> recompute_layers;
  std::string offload = "none";
  std::string offload_target = "cpu";
  std::string pp_schedule = "1f1b";
  std::string attention = "flash";
  std::string attention_backend = "auto";      // auto | fused | flash (Megatron-LM's --attention-backend)
  std::optional<std::string> impl;             // none: the framework's (megatron for Megatron-LM and NeMo, hf else)
  std::optional<std::int64_t> first_stage_layers, last_stage_layers;
  bool operator==(const LayoutOptions&) const = default;
};

// The GPU whose memory holds the job, catalog additions and runtime overheads.
struct HardwareOptions {
  std::optional<std::string> gpu;              // catalog name
  std::optional<std::string> gpu_memory;       // usable memory per GPU instead of the catalog's: "80GiB"
  std::vector<FileInput> catalog;              // hardware catalog JSON adding or overriding entries
  std::optional<std::string> cuda_context, nccl_per_comm;   // sizes
  std::optional<double> allocator_factor;
  std::optional<double> memory_margin;         // fraction of GPU memory kept free; none: 0.08
  std::optional<std::string> host_memory;      // one node's RAM instead of the system's: "2TB"
  std::optional<std::string> nvme_capacity;    // one node's local NVMe instead of the system's: "30TB"
  bool overheads = true;
  bool operator==(const HardwareOptions&) const = default;
};

// The machines: a catalog system and a node count, or a file (a cluster JSON, or one node's topology output).
struct ClusterOptions {
  std::optional<std::string> system;
  std::optional<std::int64_t> nodes;           // none: as many as the job needs
  std::optional<FileInput> topology;
  std::optional<double> nic_GBps;              // with a topology output: scale-out per GPU, one direction
  bool operator==(const ClusterOptions&) const = default;
};

struct TimingOptions {
  bool tp_overlap = false;
  bool dp_overlap = true;
  bool pp_overlap = true;
  std::optional<double> tp_overlap_sms;        // SMs the TP-overlap reduce-scatters take; none: data/perf.json's
  std::string order = "tp-cp-ep-dp-pp";
  std::vector<FileInput> perf;                 // compute constants overriding data/perf.json
  std::optional<FileInput> comm_calibration;   // collective tiers fitted to nccl-tests logs
  bool operator==(const TimingOptions&) const = default;
};

// gpuplan model: the architecture, exact parameter counts and FLOPs per token of a model.
struct ModelRequest {
  ModelSource model;
  ModelOverrides overrides;
  std::optional<std::int64_t> seq_len;         // none: the model's context, at most 2048
  bool operator==(const ModelRequest&) const = default;
};

// gpuplan memory: every byte on every GPU, by component and pipeline stage.
struct MemoryRequest {
  ModelSource model;
  ModelOverrides overrides;
  std::optional<std::string> params;           // a parameter count instead of a model ("7e9", "70B")
  TrainingOptions training;
  LayoutOptions layout;
  HardwareOptions hardware;
  std::optional<std::string> system;           // the node: its GPU, host memory and NVMe (catalog system name)
  std::optional<std::int64_t> gpus_per_node;   // the job's GPUs sharing one node's host memory and NVMe
  LaunchOptions launch;                        // from only
  bool all_stages = false;
  bool explain = false;
  bool operator==(const MemoryRequest&) const = default;
};

// gpuplan estimate: step time, throughput, MFU and memory of a layout on a cluster.
struct EstimateRequest {
  ModelSource model;
  ModelOverrides overrides;
  std::optional<std::string> params;
  TrainingOptions training;
  LayoutOptions layout;
  HardwareOptions hardware;
  ClusterOptions cluster;
  TimingOptions timing;
  LaunchOptions launch;
  bool all_stages = false;
  bool explain = false;                        // the physical bounds beside the step
  bool operator==(const EstimateRequest&) const = default;
};

// The layouts gpuplan plan may choose from; empty lists allow every value the model and cluster allow.
struct SearchOptions {
  std::vector<std::int64_t> tp, pp, vpp, cp, ep, etp, dp, micro_batch;
  std::optional<std::int64_t> max_tp, max_pp, max_cp, max_vpp;
  std::vector<std::int64_t> zero;
  std::vector<std::string> recompute;
  std::vector<std::string> cp_comm_type;       // p2p, a2a, all_gather, a2a+p2p (none: every one that applies)
  bool partial_recompute = true;
  bool offload = true;
  bool sequence_parallel = true;
  bool tp_overlap = true;
  std::string attention_backend = "auto";      // Transformer Engine's flash kernel every plan runs: auto|fused|flash
  bool operator==(const SearchOptions&) const = default;
};

struct RankingOptions {
  double memory_margin = 0.08;
  std::string objective = "step-time";
  std::optional<double> price_per_gpu_hour;
  std::int64_t top = 5;
  std::int64_t threads = 0;
  bool exhaustive = false;
  bool operator==(const RankingOptions&) const = default;
};

// gpuplan plan: the fastest layout that fits, from an exhaustive search, explained.
struct PlanRequest {
  ModelSource model;
  ModelOverrides overrides;
  TrainingOptions training;                    // seq_len, global_batch (required), precision, optimizer, loss
  ClusterOptions cluster;
  HardwareOptions hardware;                    // gpu, gpu_memory, catalog
  std::optional<std::int64_t> gpus;            // use this many of the cluster's GPUs
  SearchOptions space;
  RankingOptions ranking;
  LaunchOptions launch;                        // from: the model, training and GPU count to improve on
  std::vector<FileInput> perf;                 // compute constants overriding data/perf.json (gpuplan calibrate)
  std::optional<FileInput> comm_calibration;   // collective tiers fitted to nccl-tests logs
  bool operator==(const PlanRequest&) const = default;
};

// gpuplan size: how many GPUs of which kind, for how long, to train a model on a token budget. The layout search of
// `gpuplan plan` for every system and node count of a sweep.
struct SizeRequest {
  ModelSource model;
  ModelOverrides overrides;
  std::optional<std::string> tokens;           // the token budget: "15T" (required)
  TrainingOptions training;                    // seq_len, global_batch (sequences), precision, optimizer, loss
  std::optional<std::string> global_batch_tokens;   // "16M": the global batch in tokens instead of sequences
  std::vector<std::string> systems;            // catalog systems; empty: dgx-h100, dgx-h200, dgx-b200, mi300x-8x
  std::string nodes = "1:2048";                // MIN:MAX (powers of two and the ends) or a list "16,24,32"
  std::optional<std::string> deadline;         // "90d", "12w", "2000h"
  std::optional<std::string> price;            // dollars per GPU-hour: "2.5" or "dgx-h100=2.5,dgx-b200=5"
  bool power = false;                          // energy columns in the text table
  std::optional<double> power_overhead;        // host and network power as a fraction of the GPUs' board power
  std::string objective = "time";              // time | cost | energy: what the recommendation minimises
  double goodput = 1.0;                        // fraction of wall time that trains (failures, restarts)
  double checkpoint_overhead = 0;              // fraction of training time spent writing checkpoints
  std::vector<FileInput> perf;                 // compute constants overriding data/perf.json (gpuplan calibrate)
  std::optional<double> nic_GBps;              // scale-out per GPU, one direction, instead of the systems'
  std::optional<double> spine_oversubscription;   // instead of the catalog's, for clusters beyond one leaf
  std::vector<FileInput> catalog;
  double memory_margin = 0.08;
  std::int64_t threads = 0;
  std::optional<std::string> chart;            // where the host writes the SVG chart
  bool explain = false;
  bool operator==(const SizeRequest&) const = default;
};

// gpuplan comm: what one collective costs on a fabric.
struct CommRequest {
  std::optional<std::string> collective;
  std::optional<std::string> size;             // "1GiB", or a sweep "1MiB:8GiB"
  std::optional<std::int64_t> ranks, ranks_per_node;
  std::int64_t concurrent_groups = 1;
  ClusterOptions cluster;
  std::optional<std::string> gpu;
  std::vector<FileInput> catalog;
  std::optional<FileInput> comm_calibration;
  bool operator==(const CommRequest&) const = default;
};

// gpuplan comm --calibrate: the collective model fitted to nccl-tests outputs.
struct CalibrateRequest {
  std::vector<FileInput> logs;                 // nccl-tests outputs (--calibrate FILE...)
  // gpuplan calibrate --runs: measured step times (CSV tables, Megatron-LM logs) the compute model is fitted to,
  // from the constants of data/perf.json and `perf`; rows that do not say take precision, recompute, attention,
  // sequence parallelism and TP overlap (with tp > 1), zero and cluster.system from here.
  std::vector<FileInput> runs;
  std::vector<FileInput> perf;
  std::optional<std::string> precision, recompute, attention;
  bool sequence_parallel = false;
  bool tp_overlap = false;                     // rows with tp > 1 that do not say overlap TP communication
  std::optional<std::int64_t> zero;
  std::optional<std::string> collective;       // when the logs do not say
  std::optional<std::int64_t> ranks;
  ClusterOptions cluster;                      // to compare the model with the measurements
  std::optional<std::string> gpu;
  std::vector<FileInput> catalog;
  std::optional<std::string> out;              // where the host writes the calibration
  bool operator==(const CalibrateRequest&) const = default;
};

// gpuplan topo: link matrix, NVLink domains, GPU-NIC pairing and placement advice of one node.
struct TopoRequest {
  std::optional<FileInput> topology;           // none: the host asks the NVIDIA driver (NVML)
  std::optional<std::string> gpu;
  std::optional<FileInput> nvlink;
  std::optional<double> nic_GBps;
  std::vector<FileInput> catalog;
  bool operator==(const TopoRequest&) const = default;
};

// gpuplan catalog: the built-in GPUs, links, systems and models with their sources.
struct CatalogRequest {
  std::optional<std::string> kind;             // gpus | links | systems | models; none: all
  std::optional<std::string> name;             // one entry in detail
  std::vector<FileInput> catalog;
  bool operator==(const CatalogRequest&) const = default;
};

}  // namespace gpuplan::api
