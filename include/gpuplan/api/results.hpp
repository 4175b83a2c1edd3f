#pragma once
// The answers to gpuplan's questions: plain data, field for field what `gpuplan ... --json` prints (the same keys,
// the same nesting), so a front end can read them as C++ values, JSON or Python dicts alike. Byte counts are whole
// bytes (*_bytes or the memory components), rates GB/s (1e9 bytes per second), times seconds (*_s).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/hardware.hpp"

namespace gpuplan::api {

// A value JSON shows as null when it is not known (activations without an architecture, a GPU's NUMA node).
template <typename T>
struct Nullable : std::optional<T> {
  using std::optional<T>::optional;
  Nullable& operator=(const T& value) {
    std::optional<T>::operator=(value);
    return *this;
  }
};

// Named seconds in a fixed order (the step-time breakdown): a JSON object.
using NamedSeconds = std::vector<std::pair<std::string, double>>;

// ---------------------------------------------------------------------------------------------------------------
// gpuplan model

struct MoeSummary {
  std::int64_t routed_experts = 0, top_k = 0, expert_ffn_hidden = 0, shared_experts = 0;
  std::int64_t router_groups = 1, router_groups_chosen = 1;   // group-limited routing: top_k from chosen of groups
};
struct MlaSummary {
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
};
struct Architecture {
  std::int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn_hidden = 0, vocab = 0;
  std::int64_t max_positions = 0;
  std::string mlp, activation, norm, positions;
  bool tied_embeddings = false;
  std::optional<MoeSummary> moe;               // MoE models only
  std::optional<MlaSummary> mla;               // multi-head latent attention only
};
struct LayerParamCounts {
  std::int64_t attention = 0, mlp = 0, routed_experts = 0, shared_experts = 0, router = 0, norms = 0, total = 0;
};
struct PerLayerParams {
  std::optional<LayerParamCounts> dense, moe;
};
struct ParamSummary {
  std::int64_t total = 0, active = 0, embedding = 0, lm_head = 0, final_norm = 0, layers_total = 0;
  std::int64_t dense_layers = 0, moe_layers = 0;
  PerLayerParams per_layer;
};
struct FlopsSummary {
  std::int64_t seq_len = 0;
  double per_token_forward = 0, per_token_training = 0, six_n = 0, attention_forward = 0;
};
struct ModelResult {
  std::string name, model_type;
  Architecture architecture;
  ParamSummary params;
  FlopsSummary flops;
  std::vector<std::string> warnings;           // a sequence past the model's maximum positions
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan memory

struct MemoryTerm {
  std::string component, name;
  std::int64_t bytes = 0;
  std::string source;
};
struct MemoryPhases {
  std::int64_t forward_end = 0, backward = 0, optimizer_step = 0;
};
// One pipeline stage, per GPU.
struct StageReport {
  std::int64_t weights = 0, master_weights = 0, gradients = 0, optimizer_states = 0;
  Nullable<std::int64_t> activations, logits;  // null with a parameter count alone
  std::int64_t comm_buffers = 0, runtime = 0, total = 0;
  std::int64_t wgrad_buffers = 0;              // Transformer Engine's cached weight-gradient buffers (megatron)
  // total = reserved_peak + outside_torch; allocated_peak is what torch.cuda.max_memory_allocated would show,
  // reserved_peak what the caching allocator holds, outside_torch the CUDA context and NCCL buffers.
  std::int64_t allocated_peak = 0, reserved_peak = 0, outside_torch = 0;
  std::string peak_phase;
  MemoryPhases phases;
  std::int64_t stage = 0, layers = 0, in_flight_microbatches = 0;
  std::optional<std::int64_t> offloaded_to_host, offloaded_to_nvme;   // with offload only
  std::optional<std::vector<MemoryTerm>> terms;   // every contribution with its source
};
struct ByteTotal {
  std::int64_t total = 0;
};
struct LayoutSummary {
  std::int64_t gpus = 0, dp = 0, tp = 0, pp = 0, cp = 0, ep = 0, zero = 0, microbatches = 0;
  std::string cp_comm_type;            // how CP attention exchanges the sequence (p2p at cp 1)
  std::int64_t cp_a2a_size = 1;        // a2a+p2p: ranks of one all-to-all group
};
struct TrainingSummary {
  std::string model, precision, optimizer;
  std::int64_t seq_len = 0, micro_batch = 0;
  bool fp8_param_gather = false;   // the layers' Linear weights are fp8 parameters (--fp8-param-gather)
};
struct SuggestionReport {
  std::string change, description;
  std::int64_t new_total = 0;
  bool fits = false;
  double extra_compute_fraction = 0, extra_comm_bytes_per_step = 0;
  std::int64_t extra_gpus = 0;
  std::string cost;
};
// Host memory or NVMe of one node: what the worst stage keeps there per GPU, and with something kept there, what the
// job's GPUs on one node need of it against the node's capacity.
struct NodeStorageReport {
  std::int64_t total = 0;                      // offloaded states, per GPU (the worst stage's)
  std::optional<std::int64_t> pinned_buffers;  // host memory only: pinned staging buffers of NVMe offload, per GPU
  std::optional<std::int64_t> per_gpu;         // total + pinned_buffers, the most of any stage
  std::optional<std::int64_t> gpus_per_node;   // the job's GPUs on one node
  std::optional<std::int64_t> needed_per_node; // per_gpu x gpus_per_node
  std::optional<std::int64_t> capacity_per_node;  // absent: not known, not checked
  std::optional<bool> fits;                    // needed_per_node <= capacity_per_node (true when not checked)
};
// The framework that runs the job: its release, and the values it changes without an error.
struct FrameworkReport {
  std::string name;                            // megatron, deepspeed, torchtitan, nemo
  std::string release;                         // the release its rules and options follow
  std::vector<std::string> rewrites;           // "--sequence-parallel is switched off at tp 1 (...)"
};
// What a launch file (`from`) set, and what gpuplan did not take from it.
struct LaunchReadReport {
  std::string file, format, framework;
  std::vector<std::string> understood;         // "line 52: --tensor-model-parallel-size 8 -> tp 8"
  std::vector<std::string> not_understood;     // options that matter and are not modelled, or values not stated
  std::vector<std::string> changed_beside;     // the file's settings that options given beside it changed
  std::vector<std::string> issues;             // what the framework rejects as written
};
// One launch file written for a layout (--emit).
struct LaunchFileReport {
  std::string name, text;
};

struct MemoryResult {
  StageReport per_gpu;                         // the worst stage
  NodeStorageReport host, nvme;                // offloaded, per GPU and per node
  std::int64_t capacity = 0;
  std::int64_t usable = 0;                     // capacity less the margin: what `fits` is checked against
  double memory_margin = 0;
  std::int64_t headroom = 0;                   // usable - the worst stage's total (negative: short by that much)
  std::string gpu;                             // whose usable memory `capacity` is ("" when given as a size)
  bool gpu_assumed = false;                    // the default GPU, none was named
  bool fits = false;
  std::int64_t stage = 0;                      // which stage is the worst
  bool activations_known = true;
  ByteTotal params;
  std::optional<std::int64_t> vocab_padded;    // the vocabulary as the output layer holds it (with a model)
  LayoutSummary layout;
  TrainingSummary training;
  std::optional<std::vector<StageReport>> stages;   // every stage (all_stages)
  std::optional<std::vector<std::string>> does_not_fit;  // when it does not fit: "gpu memory", "host memory", "nvme"
  std::optional<std::string> node;             // where the host memory and NVMe capacities came from, when known
  std::vector<SuggestionReport> suggestions;   // when it does not fit: single changes that help, cheapest first
  std::vector<std::string> warnings;           // what in the job looks wrong (a sequence past the model's positions)
  std::vector<std::string> notes;              // what was chosen for the job that it did not say (a pipeline split)
  FrameworkReport framework;
  std::optional<LaunchReadReport> launch_config;   // with `from`
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan estimate

struct TimeReport {
  double step_s = 0;
  NamedSeconds breakdown;                      // the same terms in the same order for every estimate
};
struct ThroughputReport {
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0, model_tflops_per_gpu = 0, hardware_tflops_per_gpu = 0;
  double mfu = 0, hfu = 0, peak_tflops_per_gpu = 0;
  std::string flop_convention;
  double mfu_causal = 0;                       // causal attention's FLOPs halved (the FLOPs a causal kernel does)
  double hfu_causal = 0;                       // the same for the hardware FLOPs (recompute counted)
  std::vector<std::string> warnings;           // an MFU above the best published for the GPU
};
struct ClusterReport {
  std::string origin, gpu;
  std::int64_t nodes = 0, gpus_per_node = 0;
  std::string order, perf_constants;
  std::vector<std::string> comm_calibration;
  // Where the linear layers' GEMM efficiencies come from: a measured per-shape table, or "assumed: ...".
  std::string gemm_efficiency_source;
  // Where the flash-attention efficiencies come from: a measured table, a data/perf.json entry, or "assumed: ...".
  std::string attention_efficiency_source;
};
// What no step of the layout can beat (estimate --explain): FLOPs over the peak, HBM bytes over its bandwidth,
// the bytes a node brings in over its NICs; `binding` the largest, `step_over_binding` how far the step is above it.
struct BoundsReport {
  double compute_s = 0, flops_per_gpu = 0;
  double memory_s = 0, hbm_bytes_per_gpu = 0;
  double network_s = 0, node_import_bytes = 0, node_nic_GBps = 0;
  std::string binding;
  double step_over_binding = 0;
};
struct EstimateResult {
  TimeReport time;
  ThroughputReport throughput;
  MemoryResult memory;
  ClusterReport cluster;
  std::optional<std::vector<LaunchFileReport>> launch_files;   // with `emit`
  std::optional<std::vector<std::string>> launch_written;     // with `emit` and `out`: the paths the host wrote
  std::optional<BoundsReport> bounds;                          // with `explain`
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan plan

struct PlanLayout {
  std::int64_t gpus = 0, tp = 0, pp = 0, vpp = 0, cp = 0, ep = 0, etp = 0, dp = 0, micro_batch = 0, microbatches = 0;
  std::string cp_comm_type;            // p2p | a2a | all_gather | a2a+p2p
  std::int64_t cp_a2a_size = 1;
  bool sequence_parallel = false, tp_overlap = false;
  std::int64_t zero = 0;
  std::string recompute;
  std::int64_t recompute_layers = -1;
  std::string offload, offload_target, pp_schedule;
  std::int64_t first_stage_layers = -1, last_stage_layers = -1;   // an uneven pipeline split (-1: even)
};
// One ranked layout: its estimate as `gpuplan estimate --json` prints it, and the command that reproduces it.
struct PlanReport {
  TimeReport time;
  ThroughputReport throughput;
  MemoryResult memory;
  PlanLayout layout;
  std::int64_t usable_bytes = 0;
  std::string command;
  std::optional<double> cost_per_million_tokens;
  std::optional<std::int64_t> lacks_bytes;     // near misses: how much more than usable it needs
  std::vector<PlanLayout> equivalents;         // the same time and memory with another ZeRO stage or offload
};
struct SensitivityReport {
  std::string change;
  bool fits = false;
  double step_s = 0, delta = 0;
  std::string note;
};
struct PlanJob {
  std::string model, cluster, objective;
  std::int64_t gpus = 0, seq_len = 0, global_batch = 0, capacity_bytes = 0;
  bool offload_searched = true;                // offload was among the choices (no --no-offload)
  std::vector<std::string> warnings;
};
// With `from`: the launch file's own layout, estimated for the same job on the same cluster.
struct PlanBaseline {
  std::optional<double> step_s;                // none when the layout cannot run there
  std::optional<std::int64_t> memory_bytes;    // the fullest GPU's
  bool fits = false;
  std::optional<double> speedup;               // the best plan's step time against it (2.0: twice as fast)
  std::string note;                            // why it cannot run, when it cannot
};

struct PlanResult {
  PlanJob job;
  std::vector<PlanReport> plans;               // best first
  std::uint64_t space = 0, evaluated = 0, feasible = 0, pruned_by_memory = 0, pruned_by_time = 0;
  double search_seconds = 0;
  double memory_margin = 0;
  std::vector<std::string> why_winner;
  std::vector<SensitivityReport> sensitivity;
  std::vector<PlanReport> near_misses;         // when nothing fits
  std::optional<LaunchReadReport> launch_config;   // with `from`: the file the search started from
  std::optional<PlanBaseline> baseline;        // with `from`: the file's own layout
  std::optional<std::vector<LaunchFileReport>> launch_files;   // with `emit`: the best plan's
  std::optional<std::vector<std::string>> launch_written;     // with `emit` and `out`
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan size

// One system at one node count: the fastest layout that fits and what training the budget on it takes.
struct SizePoint {
  std::string system;
  std::int64_t nodes = 0, gpus = 0;
  bool fits = false;
  std::string network_tier;                    // "one node", "leaf", "spine", "core", or "" when not stated
  double nic_GBps = 0;                         // scale-out per GPU, one direction, after oversubscription
  double step_s = 0, tokens_per_s = 0, mfu = 0, bubble_fraction = 0;
  double mfu_causal = 0;                       // mfu with causal attention's score and context FLOPs halved
  double days = 0, gpu_hours = 0, energy_MWh = 0;
  std::optional<double> cost_dollars;          // with a price for the system
  bool pareto = false;                         // on the time-versus-cost front
  bool meets_deadline = false;
  std::optional<PlanLayout> layout;
  std::string command;                         // the `gpuplan estimate` command of the layout
  std::string note;                            // why it does not fit
};
struct SizeHeadline {
  std::string question;                        // "smallest dgx-h100 cluster that meets the deadline"
  std::optional<std::int64_t> point;           // index into points; none: no point answers it
  std::string answer;                          // in words
};
struct SizeJob {
  std::string model;
  double tokens = 0;
  std::int64_t seq_len = 0, global_batch = 0, global_batch_tokens = 0;
  std::string objective;
  double goodput = 1, checkpoint_overhead = 0;
  std::optional<double> deadline_days;
  std::vector<std::string> assumptions;
};
struct SizeResult {
  SizeJob job;
  std::vector<SizePoint> points;               // by system, then node count
  std::vector<SizeHeadline> headlines;
  std::vector<std::string> explanation;        // why the curves bend (--explain)
  std::vector<std::string> notes;              // network tiers, batch limits
  std::vector<std::string> warnings;           // a sequence past the model's maximum positions
  std::uint64_t layouts_evaluated = 0;
  double search_seconds = 0;
  std::optional<std::string> chart_svg;        // the chart (with --chart)
  std::optional<std::string> chart_written;    // where the host wrote it
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan comm

struct CollectiveRow {
  double size_bytes = 0, time_s = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::string algorithm, protocol, reason;
};
struct CommResult {
  std::string collective;
  std::int64_t ranks = 0, ranks_per_node = 0, nodes_spanned = 0, concurrent_groups_per_node = 0;
  std::string fabric;
  std::string library;                         // the collective library modelled: "NCCL", or "RCCL" on AMD GPUs
  double busbw_factor = 0;
  std::vector<CollectiveRow> results;          // one per size; JSON puts a single size's fields at the top level
};

struct FitStats {
  std::int64_t rows = 0, files = 0;
  double mean_rel_error = 0, max_rel_error = 0;
};
struct RankBandwidth {
  std::int64_t ranks = 0;
  double bus_GBps = 0;
};
struct TierFitReport {
  double bus_GBps = 0, latency_us = 0, step_latency_us = 0;
  std::optional<std::vector<RankBandwidth>> bus_GBps_by_ranks;   // when the logs measured several group sizes
  FitStats fit;
  std::vector<std::string> sources;
};
struct CommCalibrationSection {
  std::string comment;                         // JSON key "_comment"
  std::optional<TierFitReport> intra, inter;
  std::vector<std::string> sources;
};
// The file `--comm-calibration` reads.
struct CalibrationDocument {
  CommCalibrationSection comm;
};
struct CalibrationFileReport {
  std::string file, collective;
  std::int64_t ranks = 0, hosts = 0, rows = 0;
  std::vector<std::string> warnings;
};
struct CalibrationComparison {
  std::string file;
  std::int64_t ranks = 0, rows = 0;
  double model_mean_rel_error = 0, model_max_rel_error = 0, calibrated_mean_rel_error = 0,
         calibrated_max_rel_error = 0;
};
// calibrate --runs: the compute model's constants fitted to measured step times.
struct FittedConstant {
  std::string name;                            // its data/perf.json key
  double before = 0, after = 0;                // the start (data/perf.json and --perf) and the fit
  double lower = 0, upper = 0;                 // the physical bounds the fit kept to
};
struct MeasuredRunReport {
  std::string run;                             // file:line, or the log
  double measured_s = 0, before_s = 0, after_s = 0;
};
struct RunsFit {
  std::string gpu;                             // the overlay's section
  std::vector<FittedConstant> constants;
  std::vector<MeasuredRunReport> runs;
  double mape_before = 0, mape_after = 0;      // on the runs fitted
  std::int64_t folds = 0;                      // leave-one-out: each run predicted by a fit to the others
  double held_out_mape_before = 0, held_out_mape_after = 0;
};
struct CalibrateResult {
  std::optional<RunsFit> runs_fit;             // with runs: what --out writes is its --perf overlay
  CalibrationDocument calibration;
  std::vector<CalibrationFileReport> files;
  std::optional<std::vector<CalibrationComparison>> comparison;   // when the fabric is known
  std::optional<std::string> compared_on;      // the fabric of the comparison
  std::optional<std::string> written;          // the file the host wrote
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan topo

struct TopoGpuReport {
  std::int64_t index = 0;
  Nullable<std::string> name;
  Nullable<std::int64_t> numa_node;
  std::vector<std::int64_t> numa_affinity;   // every NUMA node listed, ascending; empty when not given
  Nullable<std::string> cpu_affinity;
  Nullable<std::int64_t> gpu_numa_id;
  std::optional<std::string> pci_bus_id;
  Nullable<std::string> nearest_nic;
};
struct TopoNicReport {
  std::string label, name;
  std::vector<std::string> gpu_codes;
  std::vector<std::int64_t> nearest_gpus;
};
struct TopoResult {
  std::string format;
  std::vector<TopoGpuReport> gpus;
  std::vector<TopoNicReport> nics;
  std::vector<std::vector<std::string>> links;
  std::vector<std::vector<double>> bandwidth_GBps;
  std::vector<std::vector<std::int64_t>> nvlink_domains, all_to_all_groups;   // xGMI domains on AMD GPUs
  std::string scaleup_link = "NVLink";         // what the GPUs' direct links are: "NVLink", or "xGMI" on AMD
  std::int64_t max_tp_in_domain = 1;
  Nullable<std::string> gpu, generation;
  std::string generation_reason;
  Nullable<double> nvlink_per_link_GBps;
  Nullable<std::string> rates_source;
  double fastest_gpu_GBps = 0, nic_GBps = 0;
  std::string nic_GBps_reason;
  std::int64_t compute_nics = 0;
  std::vector<std::string> warnings, advice;
};

// ---------------------------------------------------------------------------------------------------------------
// gpuplan catalog

struct ModelSummary {
  std::string name, model_type;
  std::int64_t layers = 0, hidden = 0, total_params = 0, active_params = 0;
};
struct CatalogResult {
  std::optional<std::vector<GpuSpec>> gpus;
  std::optional<std::vector<LinkSpec>> links;
  std::optional<std::vector<SystemSpec>> systems;
  std::optional<std::vector<ModelSummary>> models;
  bool detail = false;                         // one entry asked for by name: JSON is that entry alone
};

}  // namespace gpuplan::api
