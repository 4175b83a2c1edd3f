// The memory model in phases, like the step-time model (src/perf/step_model.hpp). A job (model, training setup,
// overheads) is prepared once; a shape (the parallel degrees and pipeline split) fixes which parameters and layers
// each pipeline rank holds; a micro-batch with its sequence parallelism and selective recomputation fixes one
// microbatch's activations; a variant (ZeRO stage, offload, full recomputation) then costs one pass over the
// stages. estimate_memory and the layout search both price memory here, so they agree to the byte.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memory/internal.hpp"

namespace gpuplan::memory {

// What every layout of one job shares: the parameter counts and the bytes per element.
struct MemoryJob {
  explicit MemoryJob(const MemoryInputs& inputs);  // `inputs` must outlive the job; its layout is not read
  const MemoryInputs* inputs;
  const ModelConfig* model;          // null with --params (activations unknown)
  ParamCounts counts;                // all zero without a model
  StateBytesPerParam state_bytes;
  double element_bytes = 2;          // one saved activation element
  double params_total = 0;
};

// The choices of a layout that change its memory but not which parameters a rank holds.
struct MemoryVariant {
  std::int64_t micro_batch = 1;
  bool sequence_parallel = false;    // only counts with tp > 1
  int zero = 0;
  Offload offload = Offload::none;
  OffloadTarget offload_target = OffloadTarget::cpu;
  Recompute recompute = Recompute::none;
  std::int64_t recompute_layers = -1;  // full recomputation: layers per stage (-1: all)
};
MemoryVariant variant_of(const Layout& layout, std::int64_t micro_batch);

// One microbatch's activations of each kind of layer and of the embedding and output sides, for one micro-batch,
// sequence parallelism and selective recomputation: the same on every stage.
struct ActivationTable {
  double dense_layer = 0;
  double moe_layer = 0;
  double checkpointed_layer = 0;     // what a fully recomputed layer keeps
  double rebuilt_layer = 0;          // torchtitan's op-level checkpointing: what one layer rebuilds in its backward
  double embedding = 0;              // first stage
  double head = 0;                   // last stage: final norm and output-layer input
  double logits = 0;                 // last stage, at the loss
  // What the micro-batch sizes on every stage alike: communication buffers and the backward's temporaries.
  std::int64_t microbatches = 1;     // per step and pipeline
  double pipeline_buffers = 0;       // send/receive (pp > 1)
  double sequence_parallel_buffer = 0;
  double context_parallel_buffers = 0;
  double expert_dispatch_buffer = 0; // on stages with MoE layers (ep > 1)
  double backward_temp = 0;          // one layer's backward: the gradients it allocates beyond what it frees
  double output_backward = 0;        // megatron, last stage: the output layer's backward (output_backward_bytes)
  double embedding_backward = 0;     // megatron, first stage: the embedding's dense 16-bit weight gradient
  double context_parallel_forward = 0;   // megatron, cp > 1: TE ring attention's forward buffers in one layer
  double context_parallel_backward = 0;  // and its backward's K/V and gradient exchange buffers
};

// The worst stage of a variant, as the search needs it.
struct MemoryPeak {
  bytes_t total = 0;                 // the worst stage's peak per GPU (estimate_memory's worst().total)
  double host_bytes = 0;             // the most host memory per GPU of any stage: states offloaded to the CPU
                                     // and the pinned buffers of NVMe offload
  double nvme_bytes = 0;             // the most NVMe per GPU of any stage
};

class MemoryModel {
 public:
  // `shape`: a layout resolve_layout accepted; its degrees, pipeline split, schedule, attention and implementation
  // are used, its variant fields are not. `job` must outlive the model.
  MemoryModel(const MemoryJob& job, const Layout& shape);
  // The same with the stages' parameters already worked out for this shape (the step model has them).
  MemoryModel(const MemoryJob& job, const Layout& shape, std::vector<StageParams> stages);

  const std::vector<StageParams>& stages() const { return stages_; }
  const Layout& shape() const { return shape_; }
  int communicators() const { return communicators_; }
  std::int64_t microbatches(std::int64_t micro_batch) const;

  ActivationTable activations(std::int64_t micro_batch, bool sequence_parallel, bool selective) const;
  // The worst stage over the stages that can be the worst (the first of each run of stages holding the same
  // parameters: later ones hold fewer microbatches in flight, so never more memory).
  MemoryPeak peak(const ActivationTable& activations, const MemoryVariant& variant) const;
  // Every stage; with `explain` each stage lists its terms with their sources. With `replay` the caching
  // allocator's reserve comes from a replay of the stage's allocations where the layout allows one (replayable);
  // the search, which needs the worst stage of many layouts fast, keeps allocator_reserve_factor.
  MemoryReport report(const MemoryVariant& variant, bool explain, bool replay = false) const;
  // The first stage's model states and the CUDA context alone: no variant's worst stage needs less.
  double states_lower_bound(int zero, Offload offload) const;

 private:
  // What stage_bytes adds up, before rounding to whole bytes.
  struct StageBytes {
    std::int64_t in_flight = 0;
    double weights = 0, master = 0, gradients = 0, optimizer = 0;
    double optimizer_params = 0;     // parameters whose optimizer step this rank runs (its ZeRO-1 shard or all)
    double activations = 0, logits = 0, working = 0, comm = 0, runtime = 0;
    double one_microbatch = 0;       // the stored activations of one microbatch (freed by its backward)
    double wgrad_buffers = 0;        // Transformer Engine's cached weight-gradient buffers
    double wgrad_dummy = 0;          // before TE 2.3: one Linear's dummy weight gradient during a backward
    double outside_torch = 0, reserve = 0;  // the runtime: outside PyTorch, and the allocator's reserve
    bool first = false, last = false;
    double forward = 0, backward = 0, optimizer_step = 0, peak = 0;   // the phases, without the runtime
    double offloaded = 0;            // to host memory or NVMe, per GPU
    double host_buffers = 0;         // pinned host buffers NVMe offload swaps through, per GPU
  };
  // Where a stage's terms are recorded when explaining, with the shapes their tables are computed from.
  struct Explanation {
    std::vector<Term>* terms;
    const ActivationContext* context;
  };
  // With kExplain every term is recorded; without, only totals are kept (the search's path).
  template <bool kExplain>
  StageBytes stage_bytes(std::size_t stage, const ActivationTable& activations, const MemoryVariant& variant,
                         const Explanation* explain) const;
  // The layers' Linear weights a rank also keeps in fp8 (Transformer Engine under Megatron-Core), and the bytes
  // per weight that takes: 2 with a transposed copy where fp8 GEMMs take only TN, else 1.
  double fp8_linear_weights(const StageParams& stage, int zero, Offload offload) const;
  // The layers' Linears run as Transformer Engine's under fp8 (megatron implementation, not torchtitan's torchao).
  bool te_fp8() const;
  double fp8_weight_bytes() const;
  template <bool kExplain>
  void add_states(const StageParams& stage, const MemoryVariant& variant, std::vector<Term>* record,
                  StageBytes& out) const;
  template <bool kExplain>
  void add_activations(const StageParams& stage, const ActivationTable& activations, const MemoryVariant& variant,
                       const Explanation* explain, StageBytes& out) const;
  template <bool kExplain>
  void add_comm_buffers(const StageParams& stage, const ActivationTable& activations, const MemoryVariant& variant,
                        std::vector<Term>* record, StageBytes& out) const;
  template <bool kExplain>
  void add_phases(const ActivationTable& activations, const MemoryVariant& variant, std::vector<Term>* record,
                  StageBytes& out) const;
  double megatron_backward_transient(const ActivationTable& activations, const StageBytes& stage) const;
  bool replayable(const MemoryVariant& variant) const;
  // What PyTorch's caching allocator reserves beyond the allocated peak on this stage (reserve_replay.cpp).
  // Empty where the replay would run too long (a budget per report); the factor stays then.
  std::optional<double> replayed_reserve(std::size_t stage, const ActivationTable& activations,
                                         const MemoryVariant& variant) const;
  void use_replayed_reserve(std::size_t stage, const ActivationTable& activations, const MemoryVariant& variant,
                            StageBytes& bytes, std::vector<Term>& terms) const;
  ActivationContext context(std::int64_t micro_batch, bool sequence_parallel, bool selective) const;
  void add_microbatch_buffers(const ActivationContext& context, ActivationTable& table) const;
  void add_context_parallel_transients(const ActivationContext& context, double cp, ActivationTable& table) const;

  const MemoryJob* job_;
  Layout shape_;
  std::vector<StageParams> stages_;
  std::vector<std::size_t> candidate_worst_;  // stages that can be the worst
  int communicators_ = 0;
  double dense_sharding_ = 1;        // data x context-parallel ranks that shard dense states
  double expert_sharding_ = 1;       // expert-data-parallel ranks that shard expert states
};

}  // namespace gpuplan::memory
