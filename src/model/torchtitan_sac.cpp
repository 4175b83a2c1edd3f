#include "model/torchtitan_sac.hpp"

#include "model/param_parts.hpp"

namespace gpuplan::detail {

namespace {

void attention_mms(const ModelConfig& m, double tp, std::vector<BlockMm>& mms) {
  const double h = static_cast<double>(m.hidden), heads = static_cast<double>(m.heads);
  const double qk = static_cast<double>(qk_head_dim(m)), v = static_cast<double>(v_head_dim(m));
  if (!m.mla.enabled) {
    const double kv = static_cast<double>(m.kv_heads) * qk;
    mms.push_back({heads * qk / tp, h});   // wq
    mms.push_back({kv / tp, h});           // wk
    mms.push_back({kv / tp, h});           // wv
  } else {
    const MlaConfig& a = m.mla;
    const double q_lora = static_cast<double>(a.q_lora_rank), kv_lora = static_cast<double>(a.kv_lora_rank);
    const double rope = static_cast<double>(a.qk_rope_head_dim), nope = static_cast<double>(a.qk_nope_head_dim);
    if (a.q_lora_rank > 0) {
      mms.push_back({q_lora, h});                   // wq_a, replicated
      mms.push_back({heads * qk / tp, q_lora});     // wq_b
    } else {
      mms.push_back({heads * qk / tp, h});          // wq
    }
    mms.push_back({kv_lora + rope, h});             // wkv_a, replicated
    mms.push_back({heads * (nope + v) / tp, kv_lora});   // wkv_b
  }
  mms.push_back({h, heads * v / tp});               // wo
}

void mlp_mms(const ModelConfig& m, double ffn, double tp, std::vector<BlockMm>& mms) {
  if (ffn <= 0) return;
  const double h = static_cast<double>(m.hidden);
  mms.push_back({ffn / tp, h});                      // w1
  if (m.mlp == MlpKind::gated) mms.push_back({ffn / tp, h});   // w3
  mms.push_back({h, ffn / tp});                      // w2
}

}  // namespace

std::vector<BlockMm> torchtitan_block_mms(const ModelConfig& m, bool moe_layer, double tp) {
  std::vector<BlockMm> mms;
  attention_mms(m, tp, mms);
  const double ffn = moe_layer ? static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden)
                               : static_cast<double>(m.ffn_hidden);
  mlp_mms(m, ffn, tp, mms);
  for (std::size_t i = 0; i < mms.size(); i += 2) mms[i].saved = true;   // the 1st, 3rd, ... mm
  return mms;
}

double torchtitan_op_sac_recomputed_flops_per_token(const ModelConfig& m) {
  auto layer_flops = [&](bool moe_layer) {
    double flops = 0;
    for (const BlockMm& mm : torchtitan_block_mms(m, moe_layer, 1))
      if (!mm.saved) flops += 2 * mm.out_width * mm.in_width;
    if (moe_layer) {
      const double h = static_cast<double>(m.hidden), up = m.mlp == MlpKind::gated ? 2 : 1;
      flops += 2 * h * static_cast<double>(m.moe.routed_experts) +
               2 * static_cast<double>(m.moe.top_k) * (up + 1) * h * static_cast<double>(m.moe.expert_ffn_hidden);
    }
    return flops;
  };
  const double moe_layers = static_cast<double>(m.moe_layers_in(0, m.layers));
  const double dense_layers = static_cast<double>(m.layers) - moe_layers;
  return dense_layers * layer_flops(false) + (moe_layers > 0 ? moe_layers * layer_flops(true) : 0);
}

}  // namespace gpuplan::detail
