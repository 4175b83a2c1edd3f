// estimate_memory: the memory model of src/memory/memory_model.hpp for one whole layout.
#include "memory/memory_model.hpp"

namespace gpuplan {

MemoryReport estimate_memory(const MemoryInputs& in, bool explain) {
  return estimate_memory(in, resolve_layout(in), explain);
}

MemoryReport estimate_memory(const MemoryInputs& in, const Layout& layout, bool explain) {
  const memory::MemoryJob job(in);
  // A report for people: the allocator's reserve replayed where it can be (the search keeps the factor).
  return memory::MemoryModel(job, layout).report(memory::variant_of(layout, in.training.micro_batch), explain, true);
}

}  // namespace gpuplan
