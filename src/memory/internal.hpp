#pragma once
// Shared pieces of the memory model (not part of the public API).
#include <cstdint>
#include <string_view>
#include <vector>

#include "gpuplan/memory.hpp"

namespace gpuplan::memory {

// Adds named contributions to a running total; records them only when explaining.
class Ledger {
 public:
  Ledger(const char* component, std::vector<Term>* record) : component_(component), record_(record) {}
  void add(const char* name, double bytes, const char* source) {
    if (bytes == 0) return;
    total_ += bytes;
    if (record_ != nullptr) record_->push_back(Term{component_, name, bytes, source});
  }
  double total() const { return total_; }

 private:
  const char* component_;
  std::vector<Term>* record_;
  double total_ = 0;
};

// Bytes per parameter of each model-state component before any sharding.
struct StateBytesPerParam {
  double weights = 0;
  double master = 0;
  double optimizer = 0;   // gradients: gradient_element_bytes (they depend on the ZeRO stage)
};
StateBytesPerParam state_bytes_per_param(const TrainingConfig& training, const ModelConfig* model);

// The optimizer step on one GPU (optimizer_step.cpp): the gradient bytes it steps on and the bytes of the
// temporaries its framework allocates then.
struct OptimizerStepInputs {
  int zero = 0;
  Offload offload = Offload::none;
  double gradients = 0;           // the gradient bytes held through the backward
  double optimizer_params = 0;    // parameters this GPU steps (its ZeRO shard, or all)
  double sub_group_elements = 0;  // DeepSpeed ZeRO-3 zero_optimization.sub_group_size
};
struct OptimizerStep {
  double gradients = 0;
  double temporaries = 0;
  const char* source = "";
};
OptimizerStep optimizer_step(const TrainingConfig& training, const Layout& layout, const OptimizerStepInputs& in);

// Whether DeepSpeed's gradients live in a buffer it allocates once, at its optimizer's construction, so that they
// exist through every forward: the BF16_Optimizer's flat fp32 gradients (bf16 without ZeRO) and ZeRO-3's flat
// partition of them (optimizer_step.cpp).
bool deepspeed_gradient_buffer(const TrainingConfig& training, const Layout& layout, int zero);
// Whether DeepSpeed trains with its BF16_Optimizer (bf16 without ZeRO, gradients accumulated in fp32).
bool deepspeed_bf16_optimizer(const TrainingConfig& training, const Layout& layout, int zero);

// Bytes of one activation element as saved (2 under 16-bit mixed precision, 4 in fp32).
double activation_element_bytes(const TrainingConfig& training);

// Routed token copies the busiest expert rank holds over its balanced share: the capacity factor when padded to
// capacity, the imbalance capped by the capacity when tokens are dropped, the imbalance when dropless.
double routed_share(const TrainingConfig& training);

// Parameters one pipeline rank holds, after TP/EP division (before ZeRO sharding).
struct StageParams {
  std::int64_t layers = 0;
  std::int64_t moe_layers = 0;
  double dense = 0;            // sharded over the data-parallel x context-parallel group
  double expert = 0;           // sharded over the expert-data-parallel group
  double largest_layer = 0;    // one layer's parameters on this rank (ZeRO-3 gather unit)
  double largest_weight = 0;   // the largest single weight matrix of a layer on this rank (DeepSpeed's gather unit)
  double embedding = 0;        // embedding or output-layer parameters on this rank
  double wgrad_buffer_elements = 0;  // Transformer Engine's cached weight-gradient buffers (megatron, TE 2.3+)
  double wgrad_dummy_elements = 0;   // before TE 2.3: the largest dummy weight gradient, alive during a backward
  double vocab_rows = 0;       // rows of the embedding / output layer on this rank (padded vocabulary / TP)
  double linear_weights = 0;   // the decoder layers' Linear weights on this rank: attention, MLP and expert projections
  bool first = false;
  bool last = false;
};
std::vector<StageParams> stage_params(const MemoryInputs& in, const Layout& layout, const ParamCounts* counts);

// Elements of Transformer Engine's cached weight-gradient buffers on a rank holding dense and/or MoE layers: one
// buffer per distinct Linear weight shape (src/memory/wgrad_buffers.cpp).
struct TeWgradElements {
  double distinct = 0;   // the sum over distinct shapes (the cached buffers)
  double largest = 0;    // the largest shape (the one dummy alive at a time without the cache)
};
TeWgradElements te_wgrad_elements(const ModelConfig& model, const Layout& layout, bool dense_layers, bool moe_layers);

// The vocabulary as the embedding and output layer hold it. Megatron-LM pads it to a multiple of
// make_vocab_size_divisible_by x TP (megatron/training/tokenizer/tokenizer.py, _vocab_size_with_padding), 128 by
// default; the other implementations keep it as it is unless a multiple is given.
std::int64_t padded_vocab(std::int64_t vocab, const TrainingConfig& training, const Layout& layout);

// How the decoder layers lie over the pipeline ranks (Megatron-Core): evenly, or with the first and last ranks
// given their own counts (--decoder-first/last-pipeline-num-layers) and the rest even over the middle ranks. Each
// rank's layers are cut into vpp chunks; chunk c of every rank comes before chunk c + 1 of any.
struct PipelineSplit {
  std::int64_t first = 0, middle = 0, last = 0;   // layers per rank
  std::int64_t pp = 1, vpp = 1;
  std::int64_t layers_on(std::int64_t rank) const;
  std::int64_t most_layers() const;              // the most any rank holds
  // Layers [begin, end) of model chunk `chunk` on pipeline rank `rank`.
  std::pair<std::int64_t, std::int64_t> chunk(std::int64_t rank, std::int64_t chunk) const;
};
// The split of `layers` under the layout; the layout must have passed resolve_layout.
PipelineSplit pipeline_split(std::int64_t layers, const Layout& layout);
// Throws InputError unless the layout's split is one Megatron-Core accepts.
void check_pipeline_split(std::int64_t layers, const Layout& layout);
// Throws InputError (naming `field`) unless the layout's attention backend is one its attention can run: Transformer
// Engine's backends only under Megatron-Core's modules with flash attention.
void check_attention_backend(const Layout& l, std::string_view field);
// For a pp x vpp that does not divide the layers: middle ranks of ceil(layers / pp) layers (rounded up to whole
// chunks), the first and last ranks as light as what remains (the first never the lighter), each a whole number
// of chunks; {-1, -1} when no such split exists.
std::pair<std::int64_t, std::int64_t> lighter_ends(std::int64_t layers, std::int64_t pp, std::int64_t vpp);

// Shapes seen by one rank for one microbatch.
struct ActivationContext {
  const ModelConfig* model = nullptr;
  double vocab = 0;            // the padded vocabulary (padded_vocab), before the TP split
  double seq_local = 0;        // sequence on this rank (seq_len / cp)
  double keys_per_query = 0;   // keys each query attends to (seq_len)
  double micro_batch = 0;
  double tp = 1;               // tensor parallel
  double cp = 1;               // context parallel
  CpComm cp_comm = CpComm::p2p;
  double cp_a2a = 1;           // a2a+p2p: ranks of one all-to-all group
  double etp = 1;              // expert tensor parallel
  bool sequence_parallel = false;
  double element_bytes = 2;    // bytes per activation element
  // Bytes per element of a GEMM input a Linear keeps for its weight gradient: 1 under Transformer Engine's fp8,
  // which keeps the quantized copy it multiplied with; element_bytes otherwise.
  double gemm_input_bytes = 2;
  bool dropout = false;
  Attention attention = Attention::flash;
  bool selective = false;
  bool op_sac = false;         // torchtitan's op-level selective checkpointing (model/torchtitan_sac.hpp)
  double ep = 1;               // expert parallel
  Impl impl = Impl::megatron;
  bool fp32_compute = false;   // torch-nn under fp32: no autocast copies
  double routed_share = 1.0;   // MoE: the busiest rank's dispatched tokens over the balanced count
  bool probs_in_activation = true;  // Megatron-Core 0.13+: routing probabilities applied in the expert activation
};

// Bytes one decoder layer saves for backward, one microbatch.
double layer_activation_bytes(const ActivationContext& c, bool moe_layer, Ledger& ledger);
// Bytes a fully recomputed layer keeps (its input).
double checkpointed_layer_bytes(const ActivationContext& c, Ledger& ledger);
// Embedding-side activations of the first stage, one microbatch.
double embedding_activation_bytes(const ActivationContext& c, Ledger& ledger);
// Output-side activations of the last stage (final norm, output-layer input), one microbatch.
double head_activation_bytes(const ActivationContext& c, Ledger& ledger);
// Logits and loss buffers at their peak, last stage, one microbatch.
double logits_bytes(const ActivationContext& c, const TrainingConfig& training, Ledger& ledger);
// Megatron's last stage during the output layer's backward: the logits' gradient, the input gradient and the
// weight-gradient tensor Megatron's own ColumnParallelLinear allocates (one microbatch).
double output_backward_bytes(const ActivationContext& c, const TrainingConfig& training, Ledger& ledger);

}  // namespace gpuplan::memory
