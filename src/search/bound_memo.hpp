#pragma once
// The time bounds of a search's work items, kept for later searches of the same job over narrower spaces (the
// sensitivity's constrained searches). A work item is a shape and a micro-batch; its step floor
// (perf::StepFloor) and its bound for each choice of sequence parallelism and TP overlap (from a step model)
// depend on nothing else, so a later search reads them instead of computing them again.
#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "search/evaluator.hpp"
#include "util/array_hash.hpp"

namespace gpuplan::search {

class BoundMemo {
 public:
  // The bounds of an item's (sequence parallelism, overlap) choices, by index (sp ? 2 : 0) + (overlap ? 1 : 0);
  // those of a choice the item does not have are not read.
  using Bounds = std::array<double, 4>;
  // What a search learned of one item: its step floor and, where the floor did not prune it, the models' bounds.
  struct ItemBounds {
    double floor_s = 0;
    bool modelled = false;
    Bounds bounds{};
  };
  // A shape's items with known bounds: (micro-batch, bounds).
  using ShapeBounds = std::vector<std::pair<std::int64_t, ItemBounds>>;

  void add(const Shape& shape, std::int64_t micro_batch, const ItemBounds& bounds);
  // The items of a shape (null when none is known): a search looks each of its shapes up once, not each item.
  const ShapeBounds* find(const Shape& shape) const;
  static const ItemBounds* find(const ShapeBounds* shape_bounds, std::int64_t micro_batch);

 private:
  // What identifies a shape: its degrees and its pipeline split.
  using Key = std::array<std::int64_t, 9>;
  static Key key(const Shape& shape);
  std::unordered_map<Key, ShapeBounds, detail::ArrayHash> shapes_;
};

}  // namespace gpuplan::search
