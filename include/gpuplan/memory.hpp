#pragma once
// The memory model: every byte on every GPU of a training job, by component and by pipeline stage.
// Pure functions of (model, training setup, layout, overheads). See docs/memory.md for every term and its source.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/model.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

enum class Precision { fp32, fp16, bf16, fp8 };   // fp16/bf16/fp8 mean mixed precision with fp32 master weights
enum class DType { fp32, bf16, fp16 };
enum class Optimizer { adam, adamw, sgd, sgd_momentum, adafactor, adam_8bit };
enum class Recompute { none, selective, full };
enum class Offload { none, optimizer, optimizer_and_params };
enum class OffloadTarget { cpu, nvme };
enum class PpSchedule { one_f_one_b, interleaved };
enum class Attention { eager, flash };
// Which flash kernel Transformer Engine runs (Megatron-LM's --attention-backend, NeMo's
// model.config.attention_backend; the NVTE_FUSED_ATTN and NVTE_FLASH_ATTN variables): auto lets it choose (cuDNN's fused attention on Hopper and newer, flash-attn on Ampere:
// transformer_engine/pytorch/attention/dot_product_attention/utils.py get_attention_backend), fused is cuDNN's,
// flash the flash-attn package's FlashAttention-2.
enum class AttentionBackend { automatic, fused, flash };
// How context-parallel attention exchanges the sequence (Megatron-LM's --cp-comm-type, run by Transformer Engine):
//   p2p        ring attention: K/V chunks passed around the CP ranks, each step hidden behind the last's compute
//   a2a        all-to-all of Q, K, V before attention and of the output after (heads split over CP), not hidden
//   all_gather all-gather of the whole K and V before attention, reduce-scatter of their gradients, not hidden
//   a2a_p2p    all-to-all inside groups of cp_a2a ranks, a ring across those groups
enum class CpComm { p2p, a2a, all_gather, a2a_p2p };
// Megatron-Core's MoE token dispatcher (--moe-token-dispatcher-type): alltoall sends each routed copy of a token to
// its expert's rank; flex runs DeepEP or HybridEP, which send a token once to each node its experts are on and
// forward it there over NVLink.
enum class MoeDispatcher { alltoall, flex };
enum class Impl { megatron, torch_nn, hf };        // whose saved tensors and buffers are counted
// The training framework that runs the job: which layouts it accepts (src/framework/rules.cpp), how it shards and
// prefetches ZeRO-3 parameters, and which launch configuration gpuplan reads and writes.
enum class Framework { megatron, deepspeed, torchtitan, nemo };
// Megatron-LM itself, or NeMo, which runs Megatron-Core's modules, schedules and distributed optimizer.
inline bool runs_megatron_core(Framework f) { return f == Framework::megatron || f == Framework::nemo; }
// How the loss is computed from the output layer (docs/memory.md, "The loss"):
//   unfused       Megatron-LM's default: the 16-bit logits are upcast and an fp32 softmax is kept for backward
//   fused_te      --cross-entropy-loss-fusion --cross-entropy-fusion-impl te: the 16-bit logits are kept and the
//                 gradient is written into them in place
//   fused_native  --cross-entropy-fusion-impl native: Megatron's fused kernel, still an fp32 softmax
//   chunked       fused linear + cross-entropy over chunks: the logits are never materialized
enum class Loss { unfused, fused_te, fused_native, chunked };

// The Transformer Engine release the megatron terms follow unless told otherwise (major x 100 + minor).
inline constexpr std::int64_t kDefaultTeVersion = 211;
// The first release that caches its weight-gradient buffers (NVIDIA/TransformerEngine#1651).
inline constexpr std::int64_t kTeCachedWgradVersion = 203;
// The Megatron-Core release the megatron terms follow unless told otherwise, and the first that applies the
// routing probabilities in the expert activation (its CHANGELOG for 0.13.0).
inline constexpr std::int64_t kDefaultMegatronVersion = 15;
inline constexpr std::int64_t kMegatronProbsInActivationVersion = 13;

struct TrainingConfig {
  std::int64_t seq_len = 2048;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 0;        // 0: micro_batch x dp (no gradient accumulation)
  Precision precision = Precision::bf16;
  Optimizer optimizer = Optimizer::adam;
  std::optional<DType> grad_dtype;      // gradient accumulation dtype; none: the framework's (gradient_dtype)
  bool master_weights = true;           // fp32 master copy under mixed precision
  double dropout = 0.0;
  Loss loss = Loss::unfused;
  // Megatron-LM pads the vocabulary to a multiple of this x TP (--make-vocab-size-divisible-by); 0: the
  // implementation's default (128 for megatron, no padding for torch-nn and hf).
  std::int64_t vocab_divisible_by = 0;
  // Transformer Engine release as major x 100 + minor (2.11 -> 211): from 2.3 on TE caches one weight-gradient
  // buffer per Linear shape; before, each backward allocates one that Megatron's gradient hook frees.
  std::int64_t te_version = kDefaultTeVersion;
  // Megatron-Core release as major x 100 + minor (0.15 -> 15): from 0.13 on the routing probabilities are applied
  // in the expert activation, so the combine keeps nothing.
  std::int64_t megatron_version = kDefaultMegatronVersion;
  // Megatron-LM's --check-for-nan-in-loss-and-grad (on unless --no-check-for-nan-in-loss-and-grad; NeMo's recipes
  // set the DDP config's check_for_nan_in_grad): before the gradients are reduced, the norm of each bucket of the
  // local gradient buffer is taken and checked, one read of the buffer per step. DeepSpeed and torchtitan have no
  // such pass, whatever this says.
  bool grad_nan_check = true;
  double moe_imbalance = 1.0;           // tokens the busiest expert rank receives over its balanced share
  double moe_capacity_factor = 0;       // Megatron's --moe-expert-capacity-factor; 0: dropless
  bool moe_pad_to_capacity = false;     // --moe-pad-expert-input-to-capacity: every expert gets its capacity
  // Megatron-LM's --fp8-param-gather: under fp8 the layers' Linear weights are fp8 tensors themselves
  // (Transformer Engine's fp8_model_init), gathered in fp8 by the distributed optimizer, with no 16-bit copy.
  bool fp8_param_gather = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // The model runs under torch.compile, which fuses the elementwise ops of eager PyTorch modules (Hugging Face's,
  // torchtitan's); Megatron-Core's are fused kernels already. The time model only: what compiled graphs save
  // for backward is counted as the eager modules save it.
  bool compile = false;
};

struct Layout {
  std::int64_t gpus = 0;                // 0: tp x pp x cp x dp
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t vpp = 1;                 // virtual stages (model chunks) per pipeline rank
  std::int64_t cp = 1;
  CpComm cp_comm = CpComm::p2p;
  std::int64_t cp_a2a = 1;              // a2a_p2p: CP ranks of one all-to-all group (the ring has cp / cp_a2a)
  std::int64_t ep = 1;
  std::int64_t etp = 0;                 // expert tensor parallel; 0: same as tp (Megatron-LM's default)
  std::int64_t dp = 0;                  // 0: derived from gpus
  bool sequence_parallel = false;
  int zero = 0;                         // 0..3; 1 == Megatron distributed optimizer
  Recompute recompute = Recompute::none;
  std::int64_t recompute_layers = -1;   // full recompute of this many layers per stage (-1: all)
  Offload offload = Offload::none;
  OffloadTarget offload_target = OffloadTarget::cpu;
  PpSchedule schedule = PpSchedule::one_f_one_b;
  Attention attention = Attention::flash;
  AttentionBackend attention_backend = AttentionBackend::automatic;
  Impl impl = Impl::megatron;
  Framework framework = Framework::megatron;
  std::int64_t first_stage_layers = -1; // uneven split: layers on the first / last stage (-1: even)
  std::int64_t last_stage_layers = -1;
};

// Microbatches each pipeline runs per step: the global batch over micro-batch x dp, or one where the global batch
// is left at 0 (no gradient accumulation).
inline std::int64_t microbatches_per_step(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t dp) {
  return global_batch > 0 ? global_batch / (micro_batch * dp) : 1;
}

// Whether the model runs under torch.compile: with --compile, and under torchtitan's asynchronous TP (--tp-overlap
// with TP > 1), which runs only in a compiled model (torchtitan/distributed/tensor_parallel.py). The step model and
// the torchtitan launch files both follow it.
inline bool runs_compiled(const TrainingConfig& training, const Layout& layout, bool tp_overlap) {
  return training.compile || (layout.framework == Framework::torchtitan && tp_overlap && layout.tp > 1);
}

// Whether attention runs through PyTorch's scaled_dot_product_attention (Hugging Face and torch.nn modules, and
// torchtitan's, whatever accounting they take) rather than Megatron-Core's Transformer Engine fused attention.
inline bool runs_torch_sdpa(const Layout& layout) {
  return layout.impl != Impl::megatron || layout.framework == Framework::torchtitan;
}

// The dtype gradients accumulate in under mixed precision: training.grad_dtype when given, else the framework's.
// DeepSpeed keeps them in the model's 16-bit dtype under ZeRO and under fp16, and in fp32 only under bf16 without
// ZeRO, where its BF16_Optimizer accumulates them (deepspeed/runtime/engine.py get_data_types, grad_accum_dtype
// None). Megatron-LM and NeMo accumulate into the fp32 main_grad; torchtitan's FSDP2 keeps the sharded gradients
// in its fp32 parameters' dtype.
inline DType gradient_dtype(const TrainingConfig& training, Framework framework, int zero) {
  if (training.grad_dtype) return *training.grad_dtype;
  if (framework != Framework::deepspeed || training.precision == Precision::fp32) return DType::fp32;
  if (training.precision == Precision::fp16) return DType::fp16;
  return zero >= 1 ? DType::bf16 : DType::fp32;
}

// Bytes of one gradient element as accumulated: 4 in fp32 training, else those of gradient_dtype.
inline double gradient_element_bytes(const TrainingConfig& training, Framework framework, int zero) {
  if (training.precision == Precision::fp32) return 4.0;
  return gradient_dtype(training, framework, zero) == DType::fp32 ? 4.0 : 2.0;
}

// Runtime overheads outside the tensor accounting. Defaults come from data/overheads.json (with sources).
struct Overheads {
  bytes_t cuda_context_bytes = 0;       // per process: CUDA context, kernel images
  bytes_t nccl_per_communicator_bytes = 0;
  double allocator_reserve_factor = 1.0;  // reserved / allocated of the caching allocator
  bool replay_allocator = true;         // replay the allocator where the layout allows; false: the factor everywhere
  bool enabled = true;                  // false: --no-overheads
  // DeepSpeed ZeRO-Infinity's pinned host buffers for NVMe offload (data/overheads.json, DeepSpeed's defaults).
  double nvme_param_buffer_count = 0;   // offload_param.buffer_count
  double nvme_param_buffer_elements = 0;  // offload_param.buffer_size (elements of 16-bit parameters)
  double nvme_optimizer_buffer_count = 0; // offload_optimizer.buffer_count
  double optimizer_sub_group_elements = 0;  // zero_optimization.sub_group_size (fp32 elements per swap buffer)
  // DeepSpeed's ZeRO buffers (data/overheads.json, DeepSpeed's defaults; a ds_config or the request replaces them).
  double deepspeed_allreduce_buffer_elements = 0;  // without ZeRO: engine.py's MEMORY_OPT_ALLREDUCE_SIZE
  double zero_reduce_bucket_elements = 0;     // reduce_bucket_size: the gradient bucket below ZeRO-3
  double zero_allgather_bucket_elements = 0;  // allgather_bucket_size: the weight gather below ZeRO-3
  double zero3_prefetch_elements = 0;   // DeepSpeed stage3_prefetch_bucket_size
  double zero3_max_live_elements = 0;   // DeepSpeed stage3_max_live_parameters
};
Overheads default_overheads();

// Default headroom kept free on every GPU (a fraction of its usable memory); docs/plan.md gives the reasoning.
inline constexpr double kDefaultMemoryMargin = 0.08;

// One host's memory and local NVMe, and how many of the job's GPUs share them: what offloaded states are checked
// against, and what CPU and NVMe offload are priced from. A host is one operating system: a whole server, or one
// compute tray of a rack-scale node (SystemSpec::hosts_per_node). A zero capacity or rate is not known.
struct NodeStorage {
  std::int64_t gpus_per_node = 0;       // GPUs of one host (the job's ranks on a host: at most this many)
  bytes_t host_memory_bytes = 0;        // the host's RAM; 0: not checked
  bytes_t nvme_bytes = 0;               // the host's local NVMe capacity; 0: not checked
  double nvme_read_GBps = 0;            // all of the host's drives together, sequential
  double nvme_write_GBps = 0;
  std::string origin;                   // where these came from ("dgx-h100", "--host-memory 2TB")
};

// GPUs of one host: the ones sharing its CPUs and drives, and what a launcher (torchrun, deepspeed, NeMo's
// trainer) starts on each machine. The resolved host's, else (no host stated) the node's.
inline std::int64_t gpus_per_host(const NodeStorage& node, std::int64_t gpus_per_node) {
  return node.gpus_per_node > 0 ? node.gpus_per_node : gpus_per_node;
}

struct MemoryInputs {
  std::optional<ModelConfig> model;     // absent: --params only (activations unknown)
  double params = 0;                    // used when model is absent
  TrainingConfig training;
  Layout layout;
  Overheads overheads;
  bytes_t capacity_bytes = 0;           // usable memory of one GPU
  std::string gpu;                      // the GPU that capacity is of ("" when it was given as a size)
  bool gpu_assumed = false;             // the default GPU: none was named
  bool gpu_fp8_any_layout = false;      // GpuSpec::fp8_gemm_any_layout of that GPU (false when not known)
  double memory_margin = kDefaultMemoryMargin;  // fraction of capacity kept free: fits means <= usable_memory()
  NodeStorage node;                     // host memory and NVMe of a node (unknown: no host or NVMe check)
  std::vector<std::string> framework_rewrites;  // values layout.framework changed on its own, with their sources
  std::vector<std::string> notes;       // what was chosen for the job that it did not say (a pipeline split)
};

// What a job may use of a GPU: capacity less the margin, rounded down to a byte. One rule for every question.
bytes_t usable_memory(bytes_t capacity_bytes, double memory_margin);

// One named contribution to a component, for the explanation table.
struct Term {
  const char* component;                // "activations", "comm_buffers", ...
  const char* name;
  double bytes;
  const char* source;
};

struct StageMemory {
  std::int64_t stage = 0;
  std::int64_t layers = 0;              // decoder layers this pipeline rank holds
  std::int64_t in_flight = 0;           // microbatches (1F1B) or model-chunk microbatches (interleaved) held
  bytes_t weights = 0;
  bytes_t master_weights = 0;
  bytes_t gradients = 0;
  bytes_t optimizer_states = 0;
  bytes_t activations = 0;
  bytes_t logits = 0;
  bytes_t comm_buffers = 0;
  bytes_t runtime = 0;
  bytes_t forward_peak = 0;             // phase totals; total is their maximum
  bytes_t backward_peak = 0;
  bytes_t optimizer_peak = 0;
  bytes_t wgrad_buffers = 0;            // Transformer Engine's persistent weight-gradient buffers (megatron)
  bytes_t total = 0;                    // reserved_peak + outside_torch
  bytes_t allocated_peak = 0;           // what torch.cuda.max_memory_allocated shows
  bytes_t reserved_peak = 0;            // what the caching allocator holds (torch.cuda.max_memory_reserved)
  bytes_t outside_torch = 0;            // CUDA context and NCCL buffers, which PyTorch never sees
  const char* peak_phase = "";
  bytes_t host = 0;                     // offloaded to host memory, per GPU
  bytes_t nvme = 0;                     // offloaded to NVMe, per GPU
  bytes_t host_buffers = 0;             // pinned host staging buffers of NVMe offload, per GPU
  std::vector<Term> terms;              // filled when MemoryOptions::explain
};

// Host memory or NVMe of one node against what the job's GPUs on it keep there.
struct StorageCheck {
  bool checked = false;                 // something is kept there and the node's capacity is known
  bytes_t per_gpu_bytes = 0;            // the worst stage's offloaded states (and, in host memory, pinned buffers)
  std::int64_t gpus_per_node = 0;       // the job's GPUs on one node
  bytes_t needed_per_node_bytes = 0;    // per_gpu_bytes x gpus_per_node
  bytes_t capacity_per_node_bytes = 0;
  bool fits = true;                     // not checked, or needed <= capacity
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  std::int64_t worst_stage = 0;
  bool activations_known = true;
  std::int64_t dp = 1;
  std::int64_t gpus = 1;
  std::int64_t microbatches = 1;        // per step, per pipeline (gradient accumulation steps)
  double params_total = 0;
  std::int64_t vocab_padded = 0;        // the vocabulary as the output layer holds it (0: no model)
  bytes_t capacity_bytes = 0;
  bytes_t usable_bytes = 0;             // capacity less the margin
  bool gpu_fits = false;                // the worst stage's total is at most usable_bytes
  StorageCheck host, nvme;              // the node's host memory and NVMe (checked when known)
  bool fits = false;                    // gpu_fits, and host memory and NVMe hold what is offloaded there
  const StageMemory& worst() const { return stages[static_cast<std::size_t>(worst_stage)]; }
};

// Fills derived layout fields (gpus, dp, etp) and checks every constraint; throws InputError naming the option.
Layout resolve_layout(const MemoryInputs& inputs);

// The estimate. `explain` records every term with its source (slower; off in searches).
MemoryReport estimate_memory(const MemoryInputs& inputs, bool explain = false);
// The same with `layout` already returned by resolve_layout(inputs), for callers that resolved it themselves.
MemoryReport estimate_memory(const MemoryInputs& inputs, const Layout& layout, bool explain);

// A single change that makes the job fit, with its new per-GPU total and its cost.
struct Suggestion {
  std::string change;                   // "--zero 3"
  std::string description;
  MemoryInputs inputs;                  // the changed inputs
  bytes_t new_total = 0;
  bool fits = false;
  double extra_compute_fraction = 0;    // +0.33 = a third more compute
  double extra_comm_bytes_per_step = 0; // per GPU
  std::int64_t extra_gpus = 0;
  std::string cost;                     // human summary of the cost
};
std::vector<Suggestion> suggest_fixes(const MemoryInputs& inputs);

// What `per_gpu_bytes` on each of the job's GPUs of a node needs of a node capacity (0: not checked).
StorageCheck check_node_storage(double per_gpu_bytes, const NodeStorage& node, std::int64_t job_gpus,
                                bytes_t capacity_bytes);

// Names used in the CLI and JSON.
const char* to_string(Precision);
const char* to_string(DType);
const char* to_string(Optimizer);
const char* to_string(Recompute);
const char* to_string(Offload);
const char* to_string(OffloadTarget);
const char* to_string(PpSchedule);
const char* to_string(Attention);
const char* to_string(AttentionBackend);
const char* to_string(CpComm);
const char* to_string(MoeDispatcher);
const char* to_string(Impl);
const char* to_string(Loss);

}  // namespace gpuplan
