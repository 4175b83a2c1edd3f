// gpuplan comm: what one collective costs on a fabric, as nccl-tests prints it.
#include <fmt/format.h>

#include <algorithm>

#include "api/fields.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api {

namespace detail {

constexpr const char* kCollectives = "allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv";

Collective parse_collective(const std::string& text) {
  if (auto c = collective_from_string(text)) return *c;
  throw InputError("collective", "'" + text + "'", kCollectives);
}

// The fabric of a comm or calibrate request: its cluster, calibrated when asked.
ResolvedCluster comm_fabric(const ClusterOptions& cluster, const HardwareCatalog& catalog,
                            const std::optional<std::string>& gpu, std::int64_t ranks, std::int64_t ranks_per_node,
                            const std::optional<FileInput>& calibration) {
  ResolvedCluster out = resolve_cluster(cluster, catalog, gpu, ranks, ranks_per_node);
  if (calibration)
    apply_comm_overrides(out.fabric, file_text(*calibration, "comm_calibration"), calibration->path);
  return out;
}

}  // namespace detail

namespace {

// "1GiB" or "1MiB:8GiB" (powers of two from MIN up to MAX).
std::vector<double> parse_sizes(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {static_cast<double>(parse_bytes(text, "size"))};
  const bytes_t lo = parse_bytes(text.substr(0, colon), "size");
  const bytes_t hi = parse_bytes(text.substr(colon + 1), "size");
  if (lo < 1 || hi < lo) throw InputError("size", "'" + text + "'", "MIN:MAX with 1 <= MIN <= MAX, e.g. 1MiB:8GiB");
  std::vector<double> out;
  for (double s = static_cast<double>(lo); s <= static_cast<double>(hi) * (1 + 1e-12); s *= 2) out.push_back(s);
  if (out.size() > 64) throw InputError("size", "'" + text + "'", "a sweep of at most 64 sizes");
  return out;
}

void check_counts(const CommRequest& r) {
  if (!r.collective)
    throw InputError("collective", "(missing)", std::string(detail::kCollectives) + ", or calibrate FILE...");
  if (!r.size) throw InputError("size", "(missing)", "a size such as 1GiB or a sweep such as 1MiB:8GiB");
  if (!r.ranks) throw InputError("ranks", "(missing)", "a whole number >= 1");
}

GroupPlacement placement(const CommRequest& r, const detail::ResolvedCluster& cluster) {
  const Fabric& f = cluster.fabric;
  const std::int64_t per_node = std::max(f.gpus_per_node, 1);
  if (r.ranks_per_node && *r.ranks_per_node > per_node)
    throw InputError("ranks_per_node", std::to_string(*r.ranks_per_node),
                     fmt::format("at most {} ({} GPUs per node)", per_node, per_node));
  GroupPlacement g;
  g.ranks = *r.ranks;
  g.ranks_per_node = r.ranks_per_node ? *r.ranks_per_node : std::min(g.ranks, per_node);
  g.concurrent_groups_per_node = r.concurrent_groups;
  const std::int64_t capacity = static_cast<std::int64_t>(f.nodes) * g.ranks_per_node;
  if (g.ranks > capacity)
    throw InputError("ranks", std::to_string(g.ranks),
                     fmt::format("at most {} on {} ({} x {} per node)", capacity, cluster.name,
                                 format_quantity(f.nodes, "node", "nodes"),
                                 format_quantity(g.ranks_per_node, "rank", "ranks")));
  return g;
}

}  // namespace

CommResult run(const CommRequest& r) {
  detail::check_bounds(r);
  check_counts(r);
  const Collective collective = detail::parse_collective(*r.collective);
  const std::vector<double> sizes = parse_sizes(*r.size);
  const auto catalog_owner = detail::resolve_catalog(r.catalog, "catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  const detail::ResolvedCluster cluster =
      detail::comm_fabric(r.cluster, catalog, r.gpu, *r.ranks, r.ranks_per_node.value_or(0), r.comm_calibration);
  const GroupPlacement g = placement(r, cluster);
  const std::int64_t placed = std::min(g.ranks, g.ranks_per_node);
  CommResult out;
  out.collective = to_string(collective);
  out.ranks = g.ranks;
  out.ranks_per_node = placed;
  out.nodes_spanned = (g.ranks + placed - 1) / placed;
  out.concurrent_groups_per_node = g.concurrent_groups_per_node;
  out.fabric = cluster.name;
  out.library = std::string(collective_library(cluster.fabric));
  out.busbw_factor = busbw_factor(collective, g.ranks);
  for (double size : sizes) {
    const CollectiveCost c = collective_cost(cluster.fabric, collective, size, g);
    out.results.push_back(CollectiveRow{size, c.time_s, c.algbw_GBps, c.busbw_GBps, c.algorithm, c.protocol, c.reason});
  }
  return out;
}

}  // namespace gpuplan::api
