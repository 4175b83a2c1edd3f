// estimate_step: the step-time model of src/perf/step_model.hpp for one whole layout, with its memory.
#include "memory/memory_model.hpp"
#include "perf/step_model.hpp"

namespace gpuplan {

StepEstimate estimate_step(const EstimateInputs& in) {
  const perf::StepJob job(in);
  const perf::StepModel model(in, job);
  StepEstimate r = model.time(model.layout());
  const memory::MemoryJob memory_job(in.memory);
  r.memory = memory::MemoryModel(memory_job, model.layout(), model.stages())
                 .report(memory::variant_of(model.layout(), in.memory.training.micro_batch), false);
  return r;
}

StepEstimate estimate_step_time(const EstimateInputs& in) {
  const perf::StepJob job(in);
  const perf::StepModel model(in, job);
  return model.time(model.layout());
}

}  // namespace gpuplan
