// Transformer Engine's weight-gradient buffers. Under Megatron-LM's gradient-accumulation fusion (its default with
// TE) a TE Linear adds its weight gradient straight into the parameter's fp32 main_grad and hands autograd a dummy
// tensor of the weight's shape instead. TE 2.x caches that dummy, one buffer per distinct (shape, dtype), for the
// life of the process (transformer_engine/pytorch/module/base.py, get_dummy_wgrad); a GroupedLinear's experts share
// one shape, so one buffer serves them all. The buffers are allocated at the first backward pass and never freed,
// so every later peak carries them. Releases before 2.3 (NVIDIA/TransformerEngine#1651) allocate the dummy in each
// backward instead, and Megatron's gradient hook frees it: one weight's worth at a time.
#include <algorithm>
#include <array>
#include <utility>

#include "memory/internal.hpp"

namespace gpuplan::memory {

namespace {

// Up to a dozen distinct [out, in] weight shapes of one rank's Linear layers.
class ShapeSet {
 public:
  void add(double rows, double cols) {
    for (std::size_t i = 0; i < size_; ++i)
      if (shapes_[i].first == rows && shapes_[i].second == cols) return;
    if (rows > 0 && cols > 0 && size_ < shapes_.size()) shapes_[size_++] = {rows, cols};
  }
  double elements() const {
    double sum = 0;
    for (std::size_t i = 0; i < size_; ++i) sum += shapes_[i].first * shapes_[i].second;
    return sum;
  }
  double largest() const {
    double most = 0;
    for (std::size_t i = 0; i < size_; ++i) most = std::max(most, shapes_[i].first * shapes_[i].second);
    return most;
  }

 private:
  std::array<std::pair<double, double>, 16> shapes_{};
  std::size_t size_ = 0;
};

double as_double(std::int64_t value) { return static_cast<double>(value); }

// Megatron-Core's TE attention: fused QKV and the output projection, or MLA's down and up projections.
void attention_shapes(const ModelConfig& m, double tp, ShapeSet& set) {
  const double hidden = as_double(m.hidden);
  const double heads = as_double(m.heads);
  if (!m.mla.enabled) {
    const double q_width = heads * as_double(m.head_width());
    const double kv_width = as_double(m.kv_heads * m.head_width());
    set.add((q_width + 2 * kv_width) / tp, hidden);
    set.add(hidden, q_width / tp);
    return;
  }
  const MlaConfig& mla = m.mla;
  const double q_head = as_double(mla.qk_nope_head_dim + mla.qk_rope_head_dim);
  if (mla.q_lora_rank > 0) {
    set.add(as_double(mla.q_lora_rank), hidden);             // linear_q_down_proj (not split over TP)
    set.add(heads * q_head / tp, as_double(mla.q_lora_rank)); // linear_q_up_proj
  } else {
    set.add(heads * q_head / tp, hidden);                     // linear_q_proj
  }
  set.add(as_double(mla.kv_lora_rank + mla.qk_rope_head_dim), hidden);  // linear_kv_down_proj
  set.add(heads * as_double(mla.qk_nope_head_dim + mla.v_head_dim) / tp, as_double(mla.kv_lora_rank));
  set.add(hidden, heads * as_double(mla.v_head_dim) / tp);   // linear_proj
}

// fc1 (gate and up fused when gated) and fc2 of an MLP `width` wide, split `split` ways.
void mlp_shapes(const ModelConfig& m, double width, double split, ShapeSet& set) {
  const double up_outputs = m.mlp == MlpKind::gated ? 2.0 : 1.0;
  set.add(up_outputs * width / split, as_double(m.hidden));
  set.add(as_double(m.hidden), width / split);
}

}  // namespace

TeWgradElements te_wgrad_elements(const ModelConfig& m, const Layout& l, bool dense_layers, bool moe_layers) {
  if (!dense_layers && !moe_layers) return {};
  ShapeSet set;
  const double tp = static_cast<double>(l.tp);
  attention_shapes(m, tp, set);
  if (dense_layers) mlp_shapes(m, as_double(m.ffn_hidden), tp, set);
  if (moe_layers) {
    mlp_shapes(m, as_double(m.moe.expert_ffn_hidden), static_cast<double>(l.etp), set);
    if (m.moe.shared_experts > 0)
      mlp_shapes(m, as_double(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden), tp, set);
  }
  return {set.elements(), set.largest()};
}

}  // namespace gpuplan::memory
