// Which layers and parameters each pipeline rank holds (Megatron-LM's placement: the first stage holds the
// embedding, the last the final norm and output layer, and with tied embeddings and pp > 1 the last stage keeps
// its own copy of the word embeddings; replicated parameters such as norms and routers are not split by TP).
#include <algorithm>

#include "memory/internal.hpp"

namespace gpuplan::memory {

namespace {

// Layers [begin, end) of model chunk `chunk` on pipeline rank `rank` (chunk 0 only unless interleaved).
std::pair<std::int64_t, std::int64_t> chunk_range(const ModelConfig& m, const Layout& l, std::int64_t rank,
                                                  std::int64_t chunk) {
  if (l.first_stage_layers >= 0 || l.last_stage_layers >= 0) {
    std::int64_t rest = m.layers, others = l.pp;
    const std::int64_t first = l.first_stage_layers, last = l.pp > 1 ? l.last_stage_layers : -1;
    if (first >= 0) { rest -= first; --others; }
    if (last >= 0) { rest -= last; --others; }
    const std::int64_t middle = others > 0 ? rest / others : 0;
    auto count = [&](std::int64_t r) {
      if (r == 0 && first >= 0) return first;
      if (r == l.pp - 1 && last >= 0) return last;
      return middle;
    };
    std::int64_t begin = 0;
    for (std::int64_t r = 0; r < rank; ++r) begin += count(r);
    return {begin, begin + count(rank)};
  }
  const std::int64_t size = m.layers / (l.pp * l.vpp);
  const std::int64_t begin = (chunk * l.pp + rank) * size;
  return {begin, begin + size};
}

}  // namespace

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
  auto dense_part = [&](const LayerParams& lp) {
    return static_cast<double>(lp.attention + lp.mlp + lp.shared_experts) / tp + static_cast<double>(lp.norms + lp.router);
  };
  const double dense_layer = dense_part(pc->dense_layer);
  const double moe_layer_dense = dense_part(pc->moe_layer);
  const double moe_layer_expert = static_cast<double>(pc->moe_layer.routed_experts) / expert_split;
  const double token_embedding = static_cast<double>(pc->token_embedding) / tp;
  const double other_embedding = static_cast<double>(pc->embedding - pc->token_embedding);
  for (std::size_t i = 0; i < out.size(); ++i) {
    StageParams& sp = out[i];
    sp.first = i == 0;
    sp.last = i + 1 == out.size();
    const std::int64_t chunks = (l.first_stage_layers >= 0 || l.last_stage_layers >= 0) ? 1 : l.vpp;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      const auto [begin, end] = chunk_range(m, l, static_cast<std::int64_t>(i), chunk);
      sp.layers += end - begin;
      if (m.is_moe())
        for (std::int64_t layer = begin; layer < end; ++layer) sp.moe_layers += m.is_moe_layer(layer) ? 1 : 0;
    }
    const double dense_layers = static_cast<double>(sp.layers - sp.moe_layers);
    const double moe_layers = static_cast<double>(sp.moe_layers);
    sp.dense = dense_layers * dense_layer + moe_layers * moe_layer_dense;
    sp.expert = moe_layers * moe_layer_expert;
    sp.largest_layer = std::max(sp.layers > sp.moe_layers ? dense_layer : 0.0,
                                sp.moe_layers > 0 ? moe_layer_dense + moe_layer_expert : 0.0);
    if (sp.first) {
      sp.embedding += token_embedding + other_embedding;
    }
    if (sp.last) {
      sp.embedding += static_cast<double>(pc->lm_head) / tp;
      sp.dense += static_cast<double>(pc->final_norm);
      if (m.tied_embeddings && l.pp > 1) sp.embedding += token_embedding;
    }
    sp.dense += sp.embedding;
  }
  return out;
}

}  // namespace gpuplan::memory
