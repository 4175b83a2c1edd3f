#pragma once
// What the main search of a plan learned of its work items, kept for the later searches of the same job over
// narrower spaces (the sensitivity's constrained searches). A work item is a shape and a micro-batch; its FLOP
// floors, its step floor (perf::StepFloor) and its bound for each choice of sequence parallelism and TP overlap
// (from a step model) depend on nothing else, so a later search takes its items, in order, from the main
// search's and reads what was learned of them instead of computing it again.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuplan::search {

// A work item: a shape and a micro-batch, with the FLOP floor of its plainest layout (step_time_lower_bound_s)
// and that floor with the 1F1B bubble, which adds (pp - 1) / vpp average stage times, each at least the floor's
// share of a microbatch. Items are searched in the order of the latter, their first bound.
struct WorkItem {
  std::size_t shape_index = 0;
  std::int64_t micro_batch = 1;
  double floor = 0;
  double floor_with_bubble = 0;
  std::size_t main_index = 0;   // its place among the main search's items
};

struct BoundMemo {
  // The bounds of an item's (sequence parallelism, overlap) choices, by index (sp ? 2 : 0) + (overlap ? 1 : 0);
  // those of a choice the item does not have are not read.
  using Bounds = std::array<double, 4>;
  // What the main search learned of one item: its step floor unless the FLOP floor alone pruned it, and the
  // models' bounds where the step floor did not.
  struct ItemBounds {
    bool floored = false;
    double floor_s = 0;
    bool modelled = false;
    Bounds bounds{};
  };
  std::size_t shapes = 0;            // in the main search's space
  std::vector<WorkItem> items;       // the main search's, in its order
  std::vector<ItemBounds> learned;   // by main_index
};

}  // namespace gpuplan::search
