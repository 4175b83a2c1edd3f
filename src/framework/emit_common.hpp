// What every emitter shares: the header naming gpuplan, the framework release and the prediction, and the
// Megatron-style model flags (Megatron-LM and NeMo describe the model the same way).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/launch.hpp"

namespace gpuplan::framework {

// Comment lines (each starting with `prefix`, "# " for shell and TOML) naming the gpuplan version, the framework
// release the options follow, the model, the layout and the predicted step time and memory.
std::string header(const EmitJob& job, std::string_view prefix);
// "tp 8, pp 4, vpp 2, cp 1, ep 1, dp 16, zero 1, recompute selective, micro-batch 1, global batch 1024"
std::string layout_summary(const EmitJob& job);
// Shell-quoted when it needs quotes.
std::string shell_word(std::string_view word);

// Megatron-Core's attention_backend for the layout's attention: eager as 'unfused'; flash as the layout's backend,
// and under 'auto' as 'fused', Transformer Engine's cuDNN kernels, which the attention efficiencies price and
// Megatron's default 'auto' picks on Hopper and Blackwell. Megatron-LM's --attention-backend, NeMo's
// model.config.attention_backend.
inline const char* megatron_attention_backend(const Layout& layout) {
  if (layout.attention == Attention::eager) return "unfused";
  return layout.attention_backend == AttentionBackend::flash ? "flash" : "fused";
}

// The model as Megatron-LM's flags, in order; InputError when the flags cannot describe it exactly (checked by
// reading them back and comparing the parameter count).
std::vector<std::pair<std::string, std::string>> megatron_model_flags(const EmitJob& job);

}  // namespace gpuplan::framework
