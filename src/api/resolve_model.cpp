// The model of a request: a catalog entry or a config.json the host read, with single fields overridden.
#include <fmt/format.h>

#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan::api::detail {

namespace {

constexpr const char* kModelAccepted = "a catalog name, a config.json or a folder holding one";

ModelConfig load(const ModelSource& source) {
  if (source.config) {
    const std::string origin = source.name_or_path.empty() ? "model" : source.name_or_path;
    ModelConfig m = model_from_hf_config(*source.config, origin);
    m.name = origin;
    return m;
  }
  const std::string& name = source.name_or_path;
  if (name.empty()) throw InputError("model", "(none)", kModelAccepted);
  // Something that looks like a path but was not read: say so rather than suggest catalog names.
  const bool looks_like_path = name.find('/') != std::string::npos ||
                               (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
  if (!is_catalog_model(name) && looks_like_path)
    throw InputError("model", "\"" + name + "\": no such file or folder", kModelAccepted);
  return model_from_catalog(name);
}

void apply_mlp(ModelConfig& m, const std::string& mlp) {
  if (mlp == "gelu") {
    m.mlp = MlpKind::plain;
    m.activation = "gelu";
  } else if (mlp == "swiglu") {
    m.mlp = MlpKind::gated;
    m.activation = "silu";
  } else {
    throw InputError("model_overrides.mlp", "\"" + mlp + "\"", "gelu or swiglu");
  }
}

void apply_norm(ModelConfig& m, const std::string& norm) {
  if (norm == "layernorm") {
    m.norm = NormKind::layernorm;
    m.norm_bias = true;
  } else if (norm == "rmsnorm") {
    m.norm = NormKind::rmsnorm;
  } else {
    throw InputError("model_overrides.norm", "\"" + norm + "\"", "layernorm or rmsnorm");
  }
}

void apply_experts(ModelConfig& m, const ModelOverrides& o) {
  if (o.experts) {
    if (*o.experts == 0) {
      m.moe = MoeConfig{};
    } else {
      if (!m.is_moe() && !o.top_k)
        throw InputError("model_overrides.top_k", "missing",
                         "an integer from 1 to model_overrides.experts (required to make a dense model MoE)");
      if (!m.is_moe()) m.moe.expert_ffn_hidden = m.ffn_hidden;
      // The model's expert groups (group-limited routing) were laid over its own experts: another count routes
      // without them.
      if (*o.experts != m.moe.routed_experts) m.moe.router_groups = m.moe.router_groups_chosen = 1;
      m.moe.routed_experts = *o.experts;
    }
  }
  if ((o.top_k || o.expert_ffn_hidden) && !m.is_moe())
    throw InputError(o.top_k ? "model_overrides.top_k" : "model_overrides.expert_ffn_hidden",
                     "given for a dense model", "use together with model_overrides.experts N (N >= 1) or a MoE model");
  if (o.top_k) m.moe.top_k = *o.top_k;
  if (o.expert_ffn_hidden) m.moe.expert_ffn_hidden = *o.expert_ffn_hidden;
}

}  // namespace

// The overrides' ranges are checked with the rest of the request (check_bounds).
ModelConfig resolve_model(const ModelSource& source, const ModelOverrides& o) {
  ModelConfig m = load(source);
  // A head width that was derived from hidden / heads stays derived when either changes.
  const bool derived_head_dim = !m.mla.enabled && (m.head_dim == 0 || m.head_dim * m.heads == m.hidden);
  const bool multi_head = m.kv_heads == m.heads;
  if (o.layers) m.layers = *o.layers;
  if (o.hidden) m.hidden = *o.hidden;
  if (o.heads) m.heads = *o.heads;
  if ((o.hidden || o.heads) && derived_head_dim) m.head_dim = 0;
  if (o.head_dim) m.head_dim = *o.head_dim;
  if (o.heads && multi_head && !o.kv_heads) m.kv_heads = *o.heads;
  if (o.kv_heads) m.kv_heads = *o.kv_heads;
  if (o.ffn_hidden) m.ffn_hidden = *o.ffn_hidden;
  if (o.vocab) m.vocab = *o.vocab;
  if (o.max_positions) m.max_positions = *o.max_positions;
  if (o.mlp) apply_mlp(m, *o.mlp);
  if (o.norm) apply_norm(m, *o.norm);
  if (o.tied_embeddings) m.tied_embeddings = *o.tied_embeddings;
  apply_experts(m, o);
  // Layer lists refer to the original depth; drop indices a smaller layer count removed.
  if (o.layers) std::erase_if(m.moe.dense_layer_ids, [&](std::int64_t id) { return id >= m.layers; });
  if (o.layers && m.moe.first_dense_layers > m.layers) m.moe.first_dense_layers = m.layers;
  validate(m);
  return m;
}

}  // namespace gpuplan::api::detail
