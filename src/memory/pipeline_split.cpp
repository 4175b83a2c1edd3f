// The decoder layers over the pipeline ranks, as Megatron-Core places them (transformer_config.py's uneven-stage
// checks and get_transformer_layer_offset): first and last ranks with their own counts, the middle ranks even, and
// with interleaving every rank's layers cut into vpp equal chunks.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "gpuplan/error.hpp"
#include "memory/internal.hpp"

namespace gpuplan::memory {

std::int64_t PipelineSplit::layers_on(std::int64_t rank) const {
  if (rank == 0) return first;
  if (rank == pp - 1) return last;
  return middle;
}

std::int64_t PipelineSplit::most_layers() const { return pp == 1 ? first : std::max({first, middle, last}); }

std::pair<std::int64_t, std::int64_t> PipelineSplit::chunk(std::int64_t rank, std::int64_t chunk_index) const {
  if (pp == 1) return {chunk_index * (first / vpp), (chunk_index + 1) * (first / vpp)};
  // One round places a chunk on every rank: first, pp - 2 middle ranks, last. Ranks before `rank` in the round:
  // the first (when rank > 0) and rank - 1 middle ones (all pp - 2 of them for the last rank).
  const std::int64_t round = (first + (pp - 2) * middle + last) / vpp;
  const std::int64_t middles_before = std::min(std::max<std::int64_t>(rank - 1, 0), pp - 2);
  const std::int64_t before = (rank > 0 ? first / vpp : 0) + middles_before * (middle / vpp);
  const std::int64_t begin = chunk_index * round + before;
  return {begin, begin + layers_on(rank) / vpp};
}

namespace {

// The layers left for the ranks between the first and last once their own counts are given, and how many ranks
// share them.
std::pair<std::int64_t, std::int64_t> middle_of(std::int64_t layers, const Layout& l) {
  std::int64_t rest = layers, middle_ranks = l.pp;
  if (l.first_stage_layers >= 0) {
    rest -= l.first_stage_layers;
    --middle_ranks;
  }
  if (l.last_stage_layers >= 0) {
    rest -= l.last_stage_layers;
    --middle_ranks;
  }
  return {rest, middle_ranks};
}

}  // namespace

PipelineSplit pipeline_split(std::int64_t layers, const Layout& l) {
  PipelineSplit split;
  split.pp = l.pp;
  split.vpp = l.vpp;
  if (l.pp == 1) {
    split.first = split.middle = split.last = layers;
    return split;
  }
  const bool uneven = l.first_stage_layers >= 0 || l.last_stage_layers >= 0;
  if (!uneven) {
    split.first = split.middle = split.last = layers / l.pp;
    return split;
  }
  const auto [rest, middle_ranks] = middle_of(layers, l);
  split.middle = middle_ranks > 0 ? rest / middle_ranks : 0;
  split.first = l.first_stage_layers >= 0 ? l.first_stage_layers : split.middle;
  split.last = l.last_stage_layers >= 0 ? l.last_stage_layers : split.middle;
  return split;
}

void check_pipeline_split(std::int64_t layers, const Layout& l) {
  const bool uneven = l.first_stage_layers >= 0 || l.last_stage_layers >= 0;
  if (!uneven) {
    if (layers % (l.pp * l.vpp) == 0) return;
    const auto [first, last] = lighter_ends(layers, l.pp, l.vpp);
    throw InputError("layout.pp",
                     fmt::format("{} x layout.vpp {} (does not divide the {} layers)", l.pp, l.vpp, layers),
                     fmt::format("pp x vpp dividing {}, or an uneven split with layout.first_stage_layers and "
                                 "layout.last_stage_layers{}",
                                 layers,
                                 first > 0 ? fmt::format(" (such as {} and {})", first, last) : std::string()));
  }
  if (l.pp == 1)
    throw InputError("layout.first_stage_layers", "with layout.pp 1", "an uneven split of 2 or more stages");
  const auto [rest, middle_ranks] = middle_of(layers, l);
  const PipelineSplit split = pipeline_split(layers, l);
  const bool divides = rest >= 0 && (middle_ranks > 0 ? rest % middle_ranks == 0 && split.middle > 0 : rest == 0);
  const bool whole_chunks = split.first % l.vpp == 0 && split.middle % l.vpp == 0 && split.last % l.vpp == 0;
  if (!divides || !whole_chunks)
    throw InputError("layout.first_stage_layers/layout.last_stage_layers",
                     fmt::format("{} / {} with {} layers on {} stages (vpp {})", l.first_stage_layers,
                                 l.last_stage_layers, layers, l.pp, l.vpp),
                     "counts whose remaining layers divide evenly over the middle stages, each stage's layers a "
                     "multiple of vpp (Megatron-Core's rule)");
}

std::pair<std::int64_t, std::int64_t> lighter_ends(std::int64_t layers, std::int64_t pp, std::int64_t vpp) {
  if (pp < 2) return {-1, -1};
  const std::int64_t per_rank = (layers + pp - 1) / pp;
  const std::int64_t middle = (per_rank + vpp - 1) / vpp * vpp;
  const std::int64_t ends = layers - (pp - 2) * middle;
  const std::int64_t last = ends / 2 / vpp * vpp;
  const std::int64_t first = ends - last;
  if (last < vpp || first % vpp != 0 || first > middle) return {-1, -1};
  return {first, last};
}

}  // namespace gpuplan::memory
