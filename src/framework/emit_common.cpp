// The header of every launch file, and the model as Megatron-LM's flags.
#include "framework/emit_common.hpp"

#include <fmt/format.h>

#include "framework/rules.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/version.hpp"
#include "util/choices.hpp"

namespace gpuplan::framework {

std::string layout_summary(const EmitJob& job) {
  const Layout& l = job.layout;
  std::string out = fmt::format("tp {}, pp {}", l.tp, l.pp);
  if (l.vpp > 1) out += fmt::format(", vpp {}", l.vpp);
  out += fmt::format(", cp {}, ep {}, etp {}, dp {}, zero {}", l.cp, l.ep, l.etp, l.dp, l.zero);
  if (l.sequence_parallel) out += ", sequence parallel";
  if (job.tp_overlap) out += ", TP overlap";
  out += fmt::format(", recompute {}", choices::name_of(choices::kRecompute, l.recompute));
  if (l.recompute == Recompute::full && l.recompute_layers >= 0) out += fmt::format(" ({} layers per stage)", l.recompute_layers);
  if (l.offload != Offload::none)
    out += fmt::format(", offload {} to {}", choices::name_of(choices::kOffload, l.offload),
                       choices::name_of(choices::kOffloadTarget, l.offload_target));
  out += fmt::format(", micro-batch {}, global batch {}", job.training.micro_batch, job.training.global_batch);
  return out;
}

std::string header(const EmitJob& job, std::string_view prefix) {
  const Release& release = release_of(job.layout.framework);
  const double gb = static_cast<double>(job.memory_bytes) / 1e9;
  const double gib = static_cast<double>(job.memory_bytes) / (1024.0 * 1024.0 * 1024.0);
  std::string out;
  const auto line = [&](const std::string& text) { out += std::string(prefix) + text + "\n"; };
  line(fmt::format("Written by gpuplan {} for {} {}.", kVersion, release.name, release.version));
  line(fmt::format("Model {} on {} GPUs ({} x {}).", job.model_name, job.layout.gpus,
                   format_quantity(job.nodes, "node", "nodes"), format_quantity(job.gpus_per_node, "GPU", "GPUs")));
  line("Layout: " + layout_summary(job) + ".");
  line(fmt::format("Predicted by gpuplan: step {:.3f} s; peak memory {:.2f} GB ({:.2f} GiB) on the fullest GPU.",
                   job.step_s, gb, gib));
  // Written for another framework than the one priced: its own kernels and memory behaviour were not.
  if (job.priced_under != job.layout.framework)
    line(fmt::format("NOTE: predicted for {}; rerun with --framework {} to price {}'s own kernels and memory.",
                     name_of(job.priced_under), name_of(job.layout.framework), name_of(job.layout.framework)));
  return out;
}

std::string shell_word(std::string_view word) {
  if (!word.empty() && word.find_first_of(" \t\n'\"$`\\*?[]()<>|&;#!") == std::string_view::npos) return std::string(word);
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;

void attention_flags(const ModelConfig& m, Flags& f) {
  f.emplace_back("--num-attention-heads", std::to_string(m.heads));
  if (m.mla.enabled) {
    f.emplace_back("--multi-latent-attention", "");
    if (m.mla.q_lora_rank > 0) f.emplace_back("--q-lora-rank", std::to_string(m.mla.q_lora_rank));
    f.emplace_back("--kv-lora-rank", std::to_string(m.mla.kv_lora_rank));
    f.emplace_back("--qk-head-dim", std::to_string(m.mla.qk_nope_head_dim));
    f.emplace_back("--qk-pos-emb-head-dim", std::to_string(m.mla.qk_rope_head_dim));
    f.emplace_back("--v-head-dim", std::to_string(m.mla.v_head_dim));
  } else {
    if (m.kv_heads != m.heads) {
      f.emplace_back("--group-query-attention", "");
      f.emplace_back("--num-query-groups", std::to_string(m.kv_heads));
    }
    f.emplace_back("--kv-channels", std::to_string(m.head_width()));
  }
  if (m.qk_norm == QkNorm::per_head) f.emplace_back("--qk-layernorm", "");
  const bool linear_bias = m.attn_out_bias || m.mlp_bias;
  if (!linear_bias) f.emplace_back("--disable-bias-linear", "");
  if (m.qkv_bias && !linear_bias) f.emplace_back("--add-qkv-bias", "");
}

void expert_flags(const ModelConfig& m, MoeDispatcher dispatcher, Flags& f) {
  if (!m.is_moe()) return;
  f.emplace_back("--num-experts", std::to_string(m.moe.routed_experts));
  f.emplace_back("--moe-router-topk", std::to_string(m.moe.top_k));
  f.emplace_back("--moe-ffn-hidden-size", std::to_string(m.moe.expert_ffn_hidden));
  if (m.moe.shared_experts > 0)
    f.emplace_back("--moe-shared-expert-intermediate-size",
                   std::to_string(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden));
  if (m.moe.first_dense_layers > 0)
    f.emplace_back("--moe-layer-freq", fmt::format("[0]*{}+[1]*{}", m.moe.first_dense_layers, m.layers - m.moe.first_dense_layers));
  else if (m.moe.layer_freq > 1)
    f.emplace_back("--moe-layer-freq", std::to_string(m.moe.layer_freq));
  if (m.moe.router_bias) f.emplace_back("--moe-router-enable-expert-bias", "");
  if (m.moe.router_groups > 1) {
    f.emplace_back("--moe-router-num-groups", std::to_string(m.moe.router_groups));
    f.emplace_back("--moe-router-group-topk", std::to_string(m.moe.router_groups_chosen));
  }
  f.emplace_back("--moe-grouped-gemm", "");
  // flex runs DeepEP (--moe-flex-dispatcher-backend, deepep by default): it needs the package installed.
  f.emplace_back("--moe-token-dispatcher-type", to_string(dispatcher));
}

// The model the flags describe, read back as the launch-script reader reads it.
ModelConfig read_back(const Flags& flags) {
  nlohmann::json args = {{"model_type", "megatron"}};
  for (const auto& [flag, value] : flags) {
    std::string dest = flag.substr(2);
    for (char& c : dest) c = c == '-' ? '_' : c;
    if (dest == "disable_bias_linear") args["add_bias_linear"] = false;
    else if (dest == "moe_layer_freq" && value.rfind("[0]*", 0) == 0) args["moe_first_dense_layers"] = std::stoll(value.substr(4));
    else if (value.empty()) args[dest] = true;
    else if (dest == "normalization" || dest == "position_embedding_type" || dest == "moe_token_dispatcher_type" ||
             dest == "moe_layer_freq")
      args[dest] = dest == "moe_layer_freq" ? nlohmann::json(std::stoll(value)) : nlohmann::json(value);
    else args[dest] = std::stoll(value);
  }
  return model_from_hf_config(args.dump(), "emitted flags");
}

}  // namespace

Flags megatron_model_flags(const EmitJob& job) {
  const ModelConfig& m = job.model;
  Flags f;
  f.emplace_back("--num-layers", std::to_string(m.layers));
  f.emplace_back("--hidden-size", std::to_string(m.hidden));
  f.emplace_back("--ffn-hidden-size", std::to_string(m.ffn_hidden));
  attention_flags(m, f);
  const char* positions = m.positions == PositionKind::learned ? "learned_absolute" : m.positions == PositionKind::rotary ? "rope" : "none";
  f.emplace_back("--position-embedding-type", positions);
  // A learned table has exactly its rows; rotary positions only need to reach the sequence (arguments.py:1353-1356).
  const std::int64_t rows = m.positions == PositionKind::learned ? m.max_positions : std::max(m.max_positions, job.training.seq_len);
  f.emplace_back("--max-position-embeddings", std::to_string(rows));
  f.emplace_back("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  if (m.mlp == MlpKind::gated) f.emplace_back("--swiglu", "");
  if (!m.tied_embeddings) f.emplace_back("--untie-embeddings-and-output-weights", "");
  expert_flags(m, job.training.moe_dispatcher, f);
  f.emplace_back("--vocab-size", std::to_string(m.vocab));
  const ModelConfig back = read_back(f);
  const std::int64_t wanted = count_params(m).total, written = count_params(back).total;
  if (wanted != written || m.positions == PositionKind::alibi)
    throw InputError("launch.emit", fmt::format("model {} ({} parameters; Megatron-LM's flags describe {})", job.model_name, wanted, written),
                     "a model Megatron-LM's GPTModel builds (its norms, biases and positions)");
  return f;
}

}  // namespace gpuplan::framework
