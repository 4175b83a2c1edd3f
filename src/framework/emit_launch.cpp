// The launch files of a layout: the framework's rules checked first (a layout it would reject is never written).
#include "framework/emitters.hpp"
#include "framework/rules.hpp"

namespace gpuplan::framework {

std::vector<LaunchFile> emit_launch(const EmitJob& job) {
  check_job({&job.model, &job.training, &job.layout, job.tp_overlap});
  switch (job.layout.framework) {
    case Framework::megatron: return emit_megatron(job);
    case Framework::deepspeed: return emit_deepspeed(job);
    case Framework::torchtitan: return emit_torchtitan(job);
    case Framework::nemo: return emit_nemo(job);
  }
  return {};
}

}  // namespace gpuplan::framework
