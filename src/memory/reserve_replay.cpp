// The caching allocator's reserve of a stage from a replay of its allocations (megatron_replay.hpp), where the
// replay knows the layout: Megatron-Core with Transformer Engine, dense layers, no context parallelism,
// recomputation or offload, ZeRO 0/1, one model chunk per rank, 16-bit weights, flash attention and an optimizer
// whose states it knows. Elsewhere the reserve stays allocator_reserve_factor x the allocated peak.
#include <optional>
#include <string_view>

#include "memory/megatron_replay.hpp"
#include "memory/memory_model.hpp"

namespace gpuplan::memory {

namespace {

std::optional<std::int64_t> moments_of(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw: return 2;
    case Optimizer::sgd_momentum: return 1;
    case Optimizer::sgd: return 0;
    default: return std::nullopt;
  }
}

}  // namespace

// The name stage_bytes.cpp gives the factor's reserve.
constexpr std::string_view kFactorReserveName = "caching-allocator reserve (fragmentation)";

bool MemoryModel::replayable(const MemoryVariant& v) const {
  const MemoryInputs& in = *job_->inputs;
  const ModelConfig* m = job_->model;
  const bool half = in.training.precision == Precision::bf16 || in.training.precision == Precision::fp16;
  return m != nullptr && !m->is_moe() && shape_.impl == Impl::megatron && shape_.cp == 1 && shape_.vpp == 1 &&
         shape_.attention == Attention::flash && v.recompute == Recompute::none && v.offload == Offload::none &&
         v.zero <= 1 && half && in.training.master_weights && moments_of(in.training.optimizer).has_value() &&
         in.overheads.enabled && in.overheads.replay_allocator;
}

// Layer forwards and backwards a whole report may replay (layers x microbatches x ranks over every stage, about
// 2 ms each 100): a stage over its share replays fewer ranks, and one that cannot fit a single rank keeps the factor.
constexpr double kReplayBudget = 20'000;

std::optional<double> MemoryModel::replayed_reserve(std::size_t stage, const ActivationTable& acts,
                                                    const MemoryVariant& v) const {
  const MemoryInputs& in = *job_->inputs;
  const ModelConfig& m = *job_->model;
  ReplayShape r;
  r.hidden = m.hidden;
  r.ffn = m.ffn_hidden;
  r.heads = m.heads;
  r.kv_heads = m.kv_heads;
  r.head_dim = m.head_width();
  r.vocab = padded_vocab(m.vocab, in.training, shape_);
  r.gated_mlp = m.mlp == MlpKind::gated;
  r.output_layer = !m.tied_embeddings || shape_.pp > 1;
  r.tokens = in.training.seq_len * v.micro_batch;
  r.tp = shape_.tp;
  r.sequence_parallel = v.sequence_parallel;
  r.pp = shape_.pp;
  r.stage = static_cast<std::int64_t>(stage);
  r.layers = stages_[stage].layers;
  r.distributed_optimizer = v.zero >= 1;
  r.shard_ranks = v.zero >= 1 ? static_cast<std::int64_t>(dense_sharding_) : 1;
  r.persistent_wgrad_buffers = in.training.te_version >= kTeCachedWgradVersion;
  r.microbatches = acts.microbatches;
  r.optimizer_moments = *moments_of(in.training.optimizer);
  r.grad_bytes = gradient_element_bytes(in.training, shape_.framework, v.zero);
  r.logits_bytes = acts.logits;
  const double share = kReplayBudget / static_cast<double>(shape_.pp);
  const double per_rank = static_cast<double>(r.layers) * static_cast<double>(replayed_microbatches(r));
  if (per_rank > share) return std::nullopt;
  r.max_ranks = static_cast<std::int64_t>(std::min(8.0, share / per_rank));
  return replayed_fragmentation(r);
}

void MemoryModel::use_replayed_reserve(std::size_t stage, const ActivationTable& acts, const MemoryVariant& v,
                                       StageBytes& bytes, std::vector<Term>& terms) const {
  const std::optional<double> replayed = replayed_reserve(stage, acts, v);
  if (!replayed) return;
  const double reserve = *replayed;
  bytes.runtime += reserve - bytes.reserve;
  bytes.reserve = reserve;
  for (Term& t : terms) {
    if (std::string_view(t.name) != kFactorReserveName) continue;
    t.name = "caching-allocator reserve (fragmentation), replayed";
    t.bytes = reserve;
    t.source = "PyTorch CUDACachingAllocator rules over Megatron-Core + TE's allocation order "
               "(src/memory/megatron_replay.hpp)";
  }
}

}  // namespace gpuplan::memory
