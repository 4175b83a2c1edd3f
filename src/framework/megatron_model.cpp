// The model a pretrain_gpt.py command line builds, written as Megatron-LM's own argument names (model_type
// "megatron", read by src/io/megatron_args_model.cpp). The vocabulary comes from --vocab-size or from the
// tokenizer when its size is known.
#include <fmt/format.h>

#include <array>

#include "framework/megatron_args.hpp"
#include "framework/reading.hpp"

namespace gpuplan::framework {

namespace {

using nlohmann::json;

// Tokenizers whose vocabulary is fixed: Megatron's built-in GPT-2 BPE and Llama-2 SentencePiece, and Hugging Face
// tokenizers of well-known models (their tokenizer.json sizes).
struct KnownTokenizer {
  std::string_view type_or_model;
  std::int64_t vocab;
};
constexpr std::array<KnownTokenizer, 6> kTokenizers = {{
    {"GPT2BPETokenizer", 50257},
    {"Llama2Tokenizer", 32000},
    {"deepseek-ai/DeepSeek-V3", 129280},
    {"meta-llama/Meta-Llama-3-8B", 128256},
    {"meta-llama/Llama-3.1-8B", 128256},
    {"mistralai/Mixtral-8x7B-v0.1", 32000},
}};

constexpr std::array<std::string_view, 20> kIntegerArgs = {
    "num_layers",     "hidden_size",          "ffn_hidden_size",      "num_attention_heads",
    "num_query_groups", "kv_channels",        "max_position_embeddings", "q_lora_rank",
    "kv_lora_rank",   "qk_head_dim",          "qk_pos_emb_head_dim",  "v_head_dim",
    "num_experts",    "moe_router_topk",      "moe_ffn_hidden_size",  "moe_shared_expert_intermediate_size",
    "moe_router_num_groups", "moe_router_group_topk", "padded_vocab_size", "vocab_size"};
constexpr std::array<std::string_view, 8> kFlagArgs = {
    "group_query_attention", "swiglu", "untie_embeddings_and_output_weights", "add_bias_linear", "add_qkv_bias",
    "qk_layernorm", "multi_latent_attention", "moe_router_enable_expert_bias"};
constexpr std::array<std::string_view, 2> kTextArgs = {"normalization", "position_embedding_type"};

// --moe-layer-freq: an integer, or a Python list expression such as "[0]*3+[1]*58" (dense layers first).
void read_layer_freq(MegatronArgs& args, json& model, LaunchConfig& out) {
  const MegatronArg* arg = args.get("moe_layer_freq");
  if (arg == nullptr) return;
  if (const auto every = whole_number(arg->value)) {
    model["moe_layer_freq"] = *every;
    return;
  }
  const std::string& pattern = arg->value;
  std::optional<std::int64_t> dense = pattern.rfind("[1]*", 0) == 0 ? std::optional<std::int64_t>{0} : std::nullopt;
  if (pattern.rfind("[0]*", 0) == 0) {
    const std::size_t plus = pattern.find("+[1]*");
    if (plus != std::string::npos) dense = whole_number(pattern.substr(4, plus - 4));
  }
  if (dense) {
    model["moe_first_dense_layers"] = *dense;
    out.understood.push_back(fmt::format("{} -> {} dense layers, then MoE", args.where("moe_layer_freq"), *dense));
    return;
  }
  out.not_understood.push_back(args.where("moe_layer_freq") + " (a layer pattern gpuplan does not read)");
}

// The vocabulary before Megatron pads it; nothing when neither --vocab-size nor the tokenizer says.
std::optional<std::int64_t> vocabulary(MegatronArgs& args, LaunchConfig& out) {
  if (const MegatronArg* size = args.get("vocab_size")) {
    out.understood.push_back(args.where("vocab_size") + " -> vocab " + size->value);
    return whole_number(size->value);
  }
  // A vocab and a merge file without a tokenizer type are the GPT-2 BPE tokenizer's (GPT2BPETokenizer).
  if (!args.has("tokenizer_type") && args.has("vocab_file") && args.has("merge_file")) {
    const std::int64_t gpt2 = kTokenizers.front().vocab;   // GPT2BPETokenizer
    out.understood.push_back(fmt::format("--vocab-file and --merge-file (GPT-2 BPE) -> vocab {}", gpt2));
    return gpt2;
  }
  for (const char* dest : {"tokenizer_model", "tokenizer_type"}) {
    const MegatronArg* arg = args.get(dest);
    if (arg == nullptr) continue;
    for (const KnownTokenizer& t : kTokenizers)
      if (arg->value == t.type_or_model) {
        out.understood.push_back(fmt::format("{} -> vocab {}", args.where(dest), t.vocab));
        return t.vocab;
      }
  }
  return std::nullopt;
}

}  // namespace

void read_megatron_model(MegatronArgs& args, const std::string& origin, LaunchConfig& out) {
  if (!args.has("num_layers") || !args.has("hidden_size") || !args.has("num_attention_heads")) {
    out.not_understood.push_back("the model: --num-layers, --hidden-size and --num-attention-heads are not all "
                                 "given; give --model");
    return;
  }
  json model = {{"model_type", "megatron"}};
  for (std::string_view dest : kIntegerArgs) {
    const MegatronArg* arg = args.get(std::string(dest));
    if (arg == nullptr) continue;
    if (const auto number = whole_number(arg->value)) model[std::string(dest)] = *number;
    else out.errors.push_back(fmt::format("line {}: {} '{}' is not an integer", arg->line, arg->flag, arg->value));
  }
  for (std::string_view dest : kFlagArgs)
    if (const MegatronArg* arg = args.get(std::string(dest))) model[std::string(dest)] = arg->value == "true";
  for (std::string_view dest : kTextArgs)
    if (const MegatronArg* arg = args.get(std::string(dest))) model[std::string(dest)] = arg->value;
  // --no-position-embedding drops the learned table; with rope it changes nothing.
  if (const MegatronArg* arg = args.get("add_position_embedding"); arg != nullptr && arg->value == "false" &&
                                                                   model.value("position_embedding_type", "learned_absolute") == "learned_absolute")
    model["position_embedding_type"] = "none";
  // max_position_embeddings defaults to the sequence length (arguments.py:1353-1356).
  if (!model.contains("max_position_embeddings") && args.has("seq_length"))
    if (const auto seq = whole_number(args.get("seq_length")->value)) model["max_position_embeddings"] = *seq;
  read_layer_freq(args, model, out);
  if (model.contains("padded_vocab_size")) {
    model["vocab_size"] = model["padded_vocab_size"];   // used as given: Megatron pads no further
    take(out, out.training, "make_vocab_size_divisible_by", 1, args.where("padded_vocab_size"));
  }
  else if (const auto vocab = vocabulary(args, out)) model["vocab_size"] = *vocab;
  if (!model.contains("vocab_size"))
    out.not_understood.emplace_back(kVocabularyNotStated);
  if (args.has("mtp_num_layers"))
    out.not_understood.push_back(args.where("mtp_num_layers") + " (multi-token prediction layers are not modelled)");
  take(out, out.model, "model", json{{"name_or_path", origin}, {"config", model}},
       "--num-layers, --hidden-size, ... (the model the script builds)");
}

}  // namespace gpuplan::framework
