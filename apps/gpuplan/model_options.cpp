#include "model_options.hpp"

#include <fmt/core.h>

#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan::cli {

namespace {

void add_int(CLI::App& cmd, const char* flag, std::optional<std::int64_t>& target, const char* help) {
  cmd.add_option_function<std::int64_t>(flag, [&target](const std::int64_t& v) { target = v; }, help)
      ->type_name("INT")
      ->group("Model overrides");
}

void check_min(const char* flag, const std::optional<std::int64_t>& value, std::int64_t lo) {
  if (value && *value < lo) throw InputError(flag, std::to_string(*value), fmt::format("an integer >= {}", lo));
}

}  // namespace

void ModelOptions::add_to(CLI::App& cmd, bool positional_model) {
  const char* what = "catalog name (see 'gpuplan catalog models'), path to a Hugging Face config.json, or a folder "
                     "holding one";
  if (positional_model) cmd.add_option("MODEL", model, std::string("Model: ") + what);
  cmd.add_option("--model", model, std::string("Model: ") + what)->type_name("NAME|PATH");
  add_int(cmd, "--layers", layers, "Decoder layers (count; default: the model's)");
  add_int(cmd, "--hidden", hidden, "Hidden size (channels; default: the model's)");
  add_int(cmd, "--heads", heads, "Attention (query) heads (count; default: the model's)");
  add_int(cmd, "--kv-heads", kv_heads,
          "Key/value heads, 1 = MQA (count; default: the model's, or --heads when the model is multi-head)");
  add_int(cmd, "--head-dim", head_dim,
          "Channels per head (default: the model's, or hidden / heads after --hidden or --heads)");
  add_int(cmd, "--ffn-hidden", ffn_hidden, "FFN width of the dense layers (channels; default: the model's)");
  add_int(cmd, "--vocab", vocab, "Vocabulary size (tokens; default: the model's)");
  add_int(cmd, "--max-positions", max_positions,
          "Maximum positions, the rows of a learned position table (tokens; default: the model's)");
  cmd.add_option_function<std::string>("--mlp", [this](const std::string& v) { mlp = v; },
                                       "MLP kind: gelu (plain up/down) or swiglu (gated) (default: the model's)")
      ->type_name("gelu|swiglu")
      ->group("Model overrides");
  cmd.add_option_function<std::string>("--norm", [this](const std::string& v) { norm = v; },
                                       "Normalisation: layernorm (weight + bias) or rmsnorm (weight) "
                                       "(default: the model's)")
      ->type_name("layernorm|rmsnorm")
      ->group("Model overrides");
  auto* tied = cmd.add_flag_callback("--tied-embeddings", [this] { tied_embeddings = true; },
                                     "Share the output layer with the token embedding (default: the model's)");
  auto* untied = cmd.add_flag_callback("--untied-embeddings", [this] { tied_embeddings = false; },
                                       "Separate output layer (default: the model's)");
  tied->excludes(untied)->group("Model overrides");
  untied->group("Model overrides");
  add_int(cmd, "--experts", experts, "Routed experts per MoE layer, 0 = dense (count; default: the model's)");
  add_int(cmd, "--top-k", top_k, "Routed experts each token uses (count; default: the model's)");
  add_int(cmd, "--expert-ffn-hidden", expert_ffn_hidden,
          "FFN width of one routed expert (channels; default: the model's, or --ffn-hidden for a dense model)");
}

ModelConfig ModelOptions::resolve() const {
  if (!has_model())
    throw InputError("--model", "missing", "a catalog name, a path to a config.json or a folder holding one");
  for (const auto& [flag, value] : {std::pair{"--layers", layers}, {"--hidden", hidden}, {"--heads", heads},
                                    {"--kv-heads", kv_heads}, {"--head-dim", head_dim}, {"--ffn-hidden", ffn_hidden},
                                    {"--vocab", vocab}, {"--max-positions", max_positions}, {"--top-k", top_k},
                                    {"--expert-ffn-hidden", expert_ffn_hidden}})
    check_min(flag, value, 1);
  check_min("--experts", experts, 0);

  ModelConfig m = load_model(model);
  // A head width that was derived from hidden / heads stays derived when either changes.
  const bool derived_head_dim = !m.mla.enabled && (m.head_dim == 0 || m.head_dim * m.heads == m.hidden);
  const bool multi_head = m.kv_heads == m.heads;
  if (layers) m.layers = *layers;
  if (hidden) m.hidden = *hidden;
  if (heads) m.heads = *heads;
  if ((hidden || heads) && derived_head_dim) m.head_dim = 0;
  if (head_dim) m.head_dim = *head_dim;
  if (heads && multi_head && !kv_heads) m.kv_heads = *heads;
  if (kv_heads) m.kv_heads = *kv_heads;
  if (ffn_hidden) m.ffn_hidden = *ffn_hidden;
  if (vocab) m.vocab = *vocab;
  if (max_positions) m.max_positions = *max_positions;
  if (mlp) {
    if (*mlp == "gelu") {
      m.mlp = MlpKind::plain;
      m.activation = "gelu";
    } else if (*mlp == "swiglu") {
      m.mlp = MlpKind::gated;
      m.activation = "silu";
    } else {
      throw InputError("--mlp", "\"" + *mlp + "\"", "gelu or swiglu");
    }
  }
  if (norm) {
    if (*norm == "layernorm") {
      m.norm = NormKind::layernorm;
      m.norm_bias = true;
    } else if (*norm == "rmsnorm") {
      m.norm = NormKind::rmsnorm;
    } else {
      throw InputError("--norm", "\"" + *norm + "\"", "layernorm or rmsnorm");
    }
  }
  if (tied_embeddings) m.tied_embeddings = *tied_embeddings;
  if (experts) {
    if (*experts == 0) {
      m.moe = MoeConfig{};
    } else {
      if (!m.is_moe() && !top_k)
        throw InputError("--top-k", "missing", "an integer from 1 to --experts (required to make a dense model MoE)");
      if (!m.is_moe()) m.moe.expert_ffn_hidden = m.ffn_hidden;
      m.moe.routed_experts = *experts;
    }
  }
  if ((top_k || expert_ffn_hidden) && !m.is_moe())
    throw InputError(top_k ? "--top-k" : "--expert-ffn-hidden", "given for a dense model",
                     "use together with --experts N (N >= 1) or with a MoE model");
  if (top_k) m.moe.top_k = *top_k;
  if (expert_ffn_hidden) m.moe.expert_ffn_hidden = *expert_ffn_hidden;
  // Layer lists refer to the original depth; drop indices a smaller --layers removed.
  if (layers) std::erase_if(m.moe.dense_layer_ids, [&](std::int64_t id) { return id >= m.layers; });
  if (layers && m.moe.first_dense_layers > m.layers) m.moe.first_dense_layers = m.layers;
  validate(m);
  return m;
}

}  // namespace gpuplan::cli
