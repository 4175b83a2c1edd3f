// The flavours torchtitan registers for the models gpuplan knows. llama3's flavours are Llama-3.1's
// architectures (torchtitan/models/llama3/__init__.py: dim, n_layers, n_heads, n_kv_heads, ffn_dim_multiplier,
// multiple_of, rope_theta 500000, vocabulary 128256); deepseek_v3's 16B is DeepSeek-V2-Lite's shape
// (torchtitan/models/deepseek_v3/__init__.py).
#include "framework/titan_models.hpp"

#include <array>

#include "framework/reading.hpp"
#include "gpuplan/model_io.hpp"

namespace gpuplan::framework {

namespace {

struct Entry {
  TitanFlavor flavor;
  std::string_view catalog;   // the catalog model, or "" for a flavour given by its config
  std::string_view config;    // a Hugging Face config.json of the flavour when it is not in the catalog
};

constexpr std::array<Entry, 5> kFlavors = {{
    {{"llama3", "8B"}, "llama-3.1-8b", ""},
    {{"llama3", "70B"}, "llama-3.1-70b", ""},
    {{"llama3", "405B"}, "llama-3.1-405b", ""},
    {{"deepseek_v3", "671B"}, "deepseek-v3", ""},
    // dim 2048, 27 layers (1 dense), 16 heads, inter_dim 10944, 64 routed experts of 1408 with 2 shared, top-6,
    // MLA without a q projection rank (q_lora_rank 0), kv_lora_rank 512, rope 64, nope 128, v 128, vocab 102400.
    {{"deepseek_v3", "16B"}, "",
     R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16,
         "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
         "num_experts_per_tok": 6, "first_k_dense_replace": 1, "q_lora_rank": null, "kv_lora_rank": 512,
         "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
         "max_position_embeddings": 4096, "tie_word_embeddings": false})"},
}};

}  // namespace

void read_titan_model(std::string_view name, std::string_view flavor, LaunchConfig& out) {
  const std::string from = "model.name " + std::string(name) + ", model.flavor " + std::string(flavor);
  for (const Entry& e : kFlavors) {
    if (e.flavor.name != name || e.flavor.flavor != flavor) continue;
    if (!e.catalog.empty()) {
      take(out, out.model, "model", std::string(e.catalog), from);
    } else {
      nlohmann::json source = {{"name_or_path", std::string(name) + "/" + std::string(flavor)},
                               {"config", nlohmann::json::parse(e.config)}};
      take(out, out.model, "model", source, from);
    }
    return;
  }
  out.not_understood.push_back(from + ": a flavour gpuplan does not know; give --model");
}

std::optional<TitanFlavor> titan_flavor_of(std::string_view model_name, const ModelConfig& model) {
  for (const Entry& e : kFlavors)
    if (!e.catalog.empty() && e.catalog == model_name) return e.flavor;
  for (const Entry& e : kFlavors) {
    const ModelConfig flavour = e.catalog.empty() ? model_from_hf_config(e.config, e.flavor.flavor)
                                                  : model_from_catalog(std::string(e.catalog));
    if (same_architecture(flavour, model)) return e.flavor;
  }
  return std::nullopt;
}

}  // namespace gpuplan::framework
