// Which layers and parameters each pipeline rank holds (Megatron-LM's placement; the layers as pipeline_split.cpp
// lays them out): the first stage holds the embedding, the last the final norm and output layer, and with tied
// embeddings and pp > 1 the last stage keeps its own copy of the word embeddings; replicated parameters such as
// norms and routers are not split by TP.
#include <algorithm>
#include <array>
#include <optional>

#include "memory/internal.hpp"

namespace gpuplan::memory {

std::int64_t padded_vocab(std::int64_t vocab, const TrainingConfig& training, const Layout& layout) {
  const std::int64_t divisible_by =
      training.vocab_divisible_by > 0 ? training.vocab_divisible_by : (layout.impl == Impl::megatron ? 128 : 1);
  const std::int64_t multiple = divisible_by * layout.tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

std::vector<StageParams> stage_params(const MemoryInputs& in, const Layout& l, const ParamCounts* pc) {
  std::vector<StageParams> out(static_cast<std::size_t>(l.pp));
  const double tp = static_cast<double>(l.tp);
  if (!in.model || pc == nullptr) {
    // --params alone: an even split over TP and PP, nothing known about layers.
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].dense = in.params / (tp * static_cast<double>(l.pp));
      out[i].first = i == 0;
      out[i].last = i + 1 == out.size();
    }
    return out;
  }
  const ModelConfig& m = *in.model;
  const double expert_split = static_cast<double>(l.ep * l.etp);
  auto linear_part = [&](const LayerParams& lp) {
    return static_cast<double>(lp.attention + lp.mlp + lp.shared_experts) / tp;
  };
  auto dense_part = [&](const LayerParams& lp) { return linear_part(lp) + static_cast<double>(lp.norms + lp.router); };
  const double dense_layer = dense_part(pc->dense_layer);
  const double moe_layer_dense = dense_part(pc->moe_layer);
  const double moe_layer_expert = static_cast<double>(pc->moe_layer.routed_experts) / expert_split;
  // Padding adds rows to the embedding and output layer alike.
  const double vocab_rows = static_cast<double>(padded_vocab(m.vocab, in.training, l)) / tp;
  const double vocab_growth = vocab_rows * tp / static_cast<double>(m.vocab);
  const double token_embedding = static_cast<double>(pc->token_embedding) * vocab_growth / tp;
  const double other_embedding = static_cast<double>(pc->embedding - pc->token_embedding);
  const PipelineSplit split = pipeline_split(m.layers, l);
  // The buffers depend only on whether a stage holds dense layers, MoE layers or both: priced once for each.
  std::array<std::optional<TeWgradElements>, 4> wgrad_by_kind;
  auto wgrad_of = [&](bool dense_layers, bool moe_layers) -> const TeWgradElements& {
    auto& known = wgrad_by_kind[(dense_layers ? 2 : 0) + (moe_layers ? 1 : 0)];
    if (!known) known = te_wgrad_elements(m, l, dense_layers, moe_layers);
    return *known;
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    StageParams& sp = out[i];
    sp.first = i == 0;
    sp.last = i + 1 == out.size();
    sp.layers = split.layers_on(static_cast<std::int64_t>(i));
    if (m.is_moe())  // which of its layers are MoE layers depends on where its chunks lie
      for (std::int64_t chunk = 0; chunk < l.vpp; ++chunk) {
        const auto [begin, end] = split.chunk(static_cast<std::int64_t>(i), chunk);
        sp.moe_layers += m.moe_layers_in(begin, end);
      }
    const TeWgradElements& wgrad = wgrad_of(sp.layers > sp.moe_layers, sp.moe_layers > 0);
    sp.largest_weight = wgrad.largest;
    // Transformer Engine's buffers exist where Megatron-Core runs on it; torchtitan's Linears are PyTorch's.
    if (l.impl == Impl::megatron && l.framework != Framework::torchtitan) {
      if (in.training.te_version >= kTeCachedWgradVersion) sp.wgrad_buffer_elements = wgrad.distinct;
      else sp.wgrad_dummy_elements = wgrad.largest;
    }
    sp.vocab_rows = vocab_rows;
    const double dense_layers = static_cast<double>(sp.layers - sp.moe_layers);
    const double moe_layers = static_cast<double>(sp.moe_layers);
    sp.dense = dense_layers * dense_layer + moe_layers * moe_layer_dense;
    sp.expert = moe_layers * moe_layer_expert;
    sp.linear_weights =
        dense_layers * linear_part(pc->dense_layer) + moe_layers * (linear_part(pc->moe_layer) + moe_layer_expert);
    sp.largest_layer = std::max(sp.layers > sp.moe_layers ? dense_layer : 0.0,
                                sp.moe_layers > 0 ? moe_layer_dense + moe_layer_expert : 0.0);
    if (sp.first) {
      sp.embedding += token_embedding + other_embedding;
    }
    if (sp.last) {
      sp.embedding += static_cast<double>(pc->lm_head) * vocab_growth / tp;
      sp.dense += static_cast<double>(pc->final_norm);
      if (m.tied_embeddings && l.pp > 1) sp.embedding += token_embedding;
    }
    sp.dense += sp.embedding;
  }
  return out;
}

}  // namespace gpuplan::memory
