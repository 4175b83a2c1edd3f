// Rank placement: which GPUs each communication group occupies, from the order of the parallel dimensions.
#include <algorithm>
#include <numeric>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"

namespace gpuplan {

namespace {
constexpr const char* kAccepted = "each of tp, cp, ep, dp, pp exactly once, innermost first, e.g. tp-cp-ep-dp-pp";
}

std::array<ParallelDim, 5> parse_order(std::string_view order) {
  if (order == "tp-cp-ep-dp-pp")  // Megatron-LM's default, on every estimate of a search
    return {ParallelDim::tp, ParallelDim::cp, ParallelDim::ep, ParallelDim::dp, ParallelDim::pp};
  std::array<ParallelDim, 5> out{};
  std::array<bool, 5> seen{};
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos <= order.size()) {
    std::size_t end = order.find_first_of("-,", pos);
    if (end == std::string_view::npos) end = order.size();
    const std::string_view name = order.substr(pos, end - pos);
    int dim = -1;
    if (name == "tp") dim = 0;
    else if (name == "cp") dim = 1;
    else if (name == "ep") dim = 2;
    else if (name == "dp") dim = 3;
    else if (name == "pp") dim = 4;
    if (dim < 0 || seen[static_cast<std::size_t>(dim)] || count >= 5)
      throw InputError("timing.order", "'" + std::string(order) + "'", kAccepted);
    seen[static_cast<std::size_t>(dim)] = true;
    out[count++] = static_cast<ParallelDim>(dim);
    pos = end + 1;
  }
  if (count != 5) throw InputError("timing.order", "'" + std::string(order) + "'", kAccepted);
  return out;
}

RankPlacement place_ranks(const Layout& l, int gpus_per_node, const std::array<ParallelDim, 5>& order) {
  // Sizes of the five coordinates; expert parallelism is carved out of data parallelism (Megatron-LM), so the
  // data coordinate proper is dp / ep when ep divides dp, and the ep coordinate is what remains of ep.
  const std::int64_t ep_in_dp = std::max<std::int64_t>(1, std::gcd(l.ep, std::max<std::int64_t>(1, l.dp)));
  std::array<std::int64_t, 5> size{};
  size[0] = std::max<std::int64_t>(1, l.tp);
  size[1] = std::max<std::int64_t>(1, l.cp);
  size[2] = ep_in_dp;
  size[3] = std::max<std::int64_t>(1, l.dp) / ep_in_dp;
  size[4] = std::max<std::int64_t>(1, l.pp);
  std::array<std::int64_t, 5> stride{};
  std::int64_t s = 1;
  for (ParallelDim d : order) {
    stride[static_cast<std::size_t>(d)] = s;
    s *= size[static_cast<std::size_t>(d)];
  }
  const std::int64_t total = s;
  const std::int64_t g = std::max<std::int64_t>(1, std::min<std::int64_t>(gpus_per_node, total));
  // Distinct values of coordinate d among the GPUs of one node.
  auto per_node = [&](std::size_t d) {
    if (stride[d] >= g) return std::int64_t{1};
    return std::max<std::int64_t>(1, std::min<std::int64_t>(size[d], g / stride[d]));
  };
  auto group = [&](std::initializer_list<std::size_t> dims) {
    GroupPlacement p;
    p.ranks = 1;
    p.ranks_per_node = 1;
    for (std::size_t d : dims) {
      p.ranks *= size[d];
      p.ranks_per_node *= per_node(d);
    }
    p.ranks_per_node = std::min(p.ranks_per_node, g);
    p.concurrent_groups_per_node = std::max<std::int64_t>(1, g / p.ranks_per_node);
    return p;
  };
  RankPlacement r;
  r.tp = group({0});
  r.cp = group({1});
  r.dp = group({1, 2, 3});
  // Expert layers re-partition the context x data ranks of a stage (Megatron-Core's expert rank generator:
  // expert-TP innermost, then EP, then expert-DP): the EP group is the next `ep` ranks of that space from its
  // innermost stride on, so with context parallelism it spans the CP ranks first; expert-DP strides over it.
  const std::int64_t inner = std::min({stride[1], stride[2], stride[3]});
  const std::int64_t space = size[1] * size[2] * size[3];
  auto strided = [&](std::int64_t ranks, std::int64_t from) {
    GroupPlacement p;
    p.ranks = std::max<std::int64_t>(1, ranks);
    p.ranks_per_node = from >= g ? 1 : std::max<std::int64_t>(1, std::min(p.ranks, g / from));
    p.concurrent_groups_per_node = std::max<std::int64_t>(1, g / p.ranks_per_node);
    return p;
  };
  const std::int64_t ep = std::max<std::int64_t>(1, std::min(l.ep, space));
  r.ep = strided(ep, inner);
  r.edp = strided(space / ep, inner * ep);
  // One stage boundary: two neighbouring stages, on one node when the pipeline coordinate varies inside a node.
  r.pp.ranks = size[4] > 1 ? 2 : 1;
  r.pp.ranks_per_node = per_node(4) > 1 ? 2 : 1;
  r.pp.concurrent_groups_per_node = std::max<std::int64_t>(1, g / r.pp.ranks_per_node);
  return r;
}

}  // namespace gpuplan
