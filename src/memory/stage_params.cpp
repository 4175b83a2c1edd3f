// Which layers and parameters each pipeline rank holds (Megatron-LM's placement: the first stage holds the
// embedding, the last the final norm and output layer, and with tied embeddings and pp > 1 the last stage keeps
// its own copy of the word embeddings; replicated parameters such as norms and routers are not split by TP).
#include <algorithm>

#include "memory/internal.hpp"

namespace gpuplan::memory {

namespace {

// Layers of each pipeline rank as [begin, end) ranges of global layer indices.
std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> layer_ranges(const ModelConfig& m, const Layout& l) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ranges(static_cast<std::size_t>(l.pp));
  if (l.first_stage_layers >= 0 || l.last_stage_layers >= 0) {
    std::vector<std::int64_t> count(static_cast<std::size_t>(l.pp), -1);
    std::int64_t rest = m.layers, others = l.pp;
    if (l.first_stage_layers >= 0) { count.front() = l.first_stage_layers; rest -= l.first_stage_layers; --others; }
    if (l.last_stage_layers >= 0 && l.pp > 1) { count.back() = l.last_stage_layers; rest -= l.last_stage_layers; --others; }
    std::int64_t begin = 0;
    for (std::size_t i = 0; i < count.size(); ++i) {
      const std::int64_t n = count[i] >= 0 ? count[i] : rest / std::max<std::int64_t>(others, 1);
      ranges[i].emplace_back(begin, begin + n);
      begin += n;
    }
    return ranges;
  }
  const std::int64_t chunk = m.layers / (l.pp * l.vpp);
  for (std::int64_t v = 0; v < l.vpp; ++v)
    for (std::int64_t r = 0; r < l.pp; ++r) {
      const std::int64_t begin = (v * l.pp + r) * chunk;
      ranges[static_cast<std::size_t>(r)].emplace_back(begin, begin + chunk);
    }
  return ranges;
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
  const auto ranges = layer_ranges(m, l);
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
    for (const auto& [begin, end] : ranges[i])
      for (std::int64_t layer = begin; layer < end; ++layer) {
        ++sp.layers;
        if (m.is_moe_layer(layer)) ++sp.moe_layers;
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
