// One emitter per framework (emit_launch chooses by job.layout.framework).
#pragma once

#include <vector>

#include "framework/launch.hpp"

namespace gpuplan::framework {

std::vector<LaunchFile> emit_megatron(const EmitJob& job);     // train_megatron.sh
std::vector<LaunchFile> emit_deepspeed(const EmitJob& job);    // ds_config.json, train_deepspeed.sh
std::vector<LaunchFile> emit_torchtitan(const EmitJob& job);   // torchtitan.toml, train_torchtitan.sh
std::vector<LaunchFile> emit_nemo(const EmitJob& job);         // train_nemo.sh

}  // namespace gpuplan::framework
