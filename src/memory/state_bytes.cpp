// Bytes per parameter of weights, fp32 master copy and optimizer moments (docs/memory.md, table 1).
#include <algorithm>

#include "memory/internal.hpp"

namespace gpuplan::memory {

StateBytesPerParam state_bytes_per_param(const TrainingConfig& training, const ModelConfig* model) {
  StateBytesPerParam b;
  const bool mixed = training.precision != Precision::fp32;
  // Megatron-LM keeps bf16/fp16 parameters under fp8 too (Transformer Engine casts per GEMM).
  b.weights = mixed ? 2.0 : 4.0;
  b.master = (mixed && training.master_weights) ? 4.0 : 0.0;
  switch (training.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw: b.optimizer = 8.0; break;            // fp32 exp_avg and exp_avg_sq
    case Optimizer::sgd: b.optimizer = 0.0; break;
    case Optimizer::sgd_momentum: b.optimizer = 4.0; break;     // fp32 momentum buffer
    case Optimizer::adam_8bit:
      // bitsandbytes: two 1-byte moments plus one fp32 absmax per 2048-element block for each.
      b.optimizer = 2.0 + 2.0 * 4.0 / 2048.0;
      break;
    case Optimizer::adafactor: {
      // Factored second moment without first moment (Shazeer & Stern 2018, HF default beta1=None):
      // rows + cols fp32 values per matrix, about 2/h of a matrix's entries for h-wide matrices.
      const double h = model != nullptr ? static_cast<double>(std::max<std::int64_t>(model->hidden, 1)) : 4096.0;
      b.optimizer = 4.0 * 2.0 / h;
      break;
    }
  }
  return b;
}

double routed_share(const TrainingConfig& t) {
  if (t.moe_pad_to_capacity) return t.moe_capacity_factor;
  return t.moe_capacity_factor > 0 ? std::min(t.moe_imbalance, t.moe_capacity_factor) : t.moe_imbalance;
}

double activation_element_bytes(const TrainingConfig& training) {
  return training.precision == Precision::fp32 ? 4.0 : 2.0;
}

}  // namespace gpuplan::memory
