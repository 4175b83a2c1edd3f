// The time bounds of work items, remembered across the searches of one plan.
#include "search/bound_memo.hpp"

namespace gpuplan::search {

BoundMemo::Key BoundMemo::key(const Shape& s) {
  return {s.gpus, s.tp, s.cp, s.pp, s.vpp, s.ep, s.etp, s.first_stage_layers, s.last_stage_layers};
}

void BoundMemo::add(const Shape& shape, std::int64_t micro_batch, const ItemBounds& bounds) {
  shapes_[key(shape)].push_back({micro_batch, bounds});
}

const BoundMemo::ShapeBounds* BoundMemo::find(const Shape& shape) const {
  const auto it = shapes_.find(key(shape));
  return it == shapes_.end() ? nullptr : &it->second;
}

const BoundMemo::ItemBounds* BoundMemo::find(const ShapeBounds* shape_bounds, std::int64_t micro_batch) {
  if (shape_bounds == nullptr) return nullptr;
  for (const auto& [mb, bounds] : *shape_bounds)   // a shape has a dozen micro-batches or so
    if (mb == micro_batch) return &bounds;
  return nullptr;
}

}  // namespace gpuplan::search
