#pragma once
// torchtitan's layer-frequency selective checkpointing (activation_checkpoint.mode "selective" with
// selective_ac_option "N", torchtitan/distributed/activation_checkpoint.py _apply_layer_sac): a counter over the
// blocks a rank builds wraps every Nth one in a full checkpoint, so N checkpoints stage_layers / N of them (rounded
// down). gpuplan holds it as --recompute full --recompute-layers with that many layers per stage.
#include <cstdint>

namespace gpuplan::framework {

inline std::int64_t titan_checkpointed_blocks(std::int64_t stage_layers, std::int64_t every) {
  return every > 0 ? stage_layers / every : 0;
}

// The smallest N that checkpoints `blocks` of `stage_layers` blocks; 0 where none does.
inline std::int64_t titan_checkpoint_frequency(std::int64_t stage_layers, std::int64_t blocks) {
  for (std::int64_t every = 1; every <= stage_layers; ++every)
    if (titan_checkpointed_blocks(stage_layers, every) == blocks) return every;
  return 0;
}

}  // namespace gpuplan::framework
