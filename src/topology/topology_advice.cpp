// Placement advice from a finished topology report (stage 5 of analyze_topology): where tensor, expert, pipeline
// and data parallelism belong on this node, and the warnings that go with it. Reads nothing but the report.
#include "topology/topology_advice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace gpuplan {

namespace detail {

int pow2_floor(int x) {
  int p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

int gpu_count(const TopologyReport& report) { return static_cast<int>(report.topology.gpus.size()); }

int rank_of(const std::string& code) { return path_rank(classify_code(code).type); }

}  // namespace detail

namespace {

using detail::gpu_count;
using detail::pow2_floor;
using detail::rank_of;
using detail::TopologyAdvice;

// Pairs of domains (or PCIe islands) listed at most: a large node would otherwise print hundreds of lines.
constexpr int kMaxPairWarnings = 12;

// The ring search visits 2^n x n states: instant up to 16 GPUs; larger domains get no ring note.
constexpr std::size_t kMaxRingSearchGpus = 16;

std::string format_GBps(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

std::string fast_link_name(const TopologyReport& rep) { return rep.has_xgmi ? "xGMI" : "NVLink"; }

// Whether a Hamiltonian cycle exists over `members` using only pairs with bandwidth >= threshold: then a ring
// collective over them never waits on a slower hop. Dynamic programming over subsets, so members <= 16.
bool has_ring(const std::vector<int>& members, const std::vector<std::vector<double>>& bandwidth, double threshold) {
  const int count = static_cast<int>(members.size());
  if (count <= 1) return true;
  if (count == 2) return bandwidth[members[0]][members[1]] >= threshold;
  if (count > static_cast<int>(kMaxRingSearchGpus)) return false;
  auto fast_enough = [&](int a, int b) { return bandwidth[members[a]][members[b]] >= threshold; };
  // reachable[mask][v]: a path from member 0 through exactly the members in mask ends at member v.
  std::vector<std::vector<char>> reachable(std::size_t{1} << count, std::vector<char>(count, 0));
  reachable[1][0] = 1;
  for (std::size_t mask = 1; mask < reachable.size(); ++mask) {
    if (!(mask & 1)) continue;
    for (int v = 0; v < count; ++v) {
      if (!reachable[mask][v]) continue;
      for (int w = 1; w < count; ++w) {
        if (!(mask & (std::size_t{1} << w)) && fast_enough(v, w)) reachable[mask | (std::size_t{1} << w)][w] = 1;
      }
    }
  }
  const std::size_t everyone = reachable.size() - 1;
  for (int v = 1; v < count; ++v) {
    if (reachable[everyone][v] && fast_enough(v, 0)) return true;
  }
  return false;
}

// Slowest pair inside a group, per direction; 0 for fewer than two GPUs.
double slowest_pair_in(const TopologyReport& rep, const std::vector<int>& group) {
  double slowest = 0;
  for (int a : group) {
    for (int b : group) {
      if (a != b) slowest = slowest == 0 ? rep.bandwidth_GBps[a][b] : std::min(slowest, rep.bandwidth_GBps[a][b]);
    }
  }
  return slowest;
}

// ---------------------------------------------------------------------------------------------------------------
// Tensor and expert parallelism inside the node

// Domains of more than one GPU: the only places tensor parallelism can stay on fast links.
std::vector<std::vector<int>> multi_gpu_domains(const TopologyReport& rep) {
  std::vector<std::vector<int>> domains;
  for (const auto& domain : rep.nvlink_domains) {
    if (domain.size() > 1) domains.push_back(domain);
  }
  return domains;
}

// No fast link anywhere: every pair runs over PCIe; name the best path there is.
void advise_pcie_only(const TopologyReport& rep, TopologyAdvice& out) {
  const int gpus = gpu_count(rep);
  const auto& links = rep.topology.links;
  int best = path_rank(PathType::unknown);
  std::string best_code;
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      if (i != j && rank_of(links[i][j]) < best) {
        best = rank_of(links[i][j]);
        best_code = links[i][j];
      }
    }
  }
  const std::string best_path = best_code.empty() ? std::string("unknown") : describe_path(best_code);
  out.advice.push_back(fmt::format("No {} between any GPUs: every pair communicates over PCIe (best path: {}), about "
                                   "{} GB/s per direction. Tensor and expert parallelism would pay PCIe speed on "
                                   "every layer: prefer tensor parallelism 1, with pipeline parallelism across these "
                                   "GPUs (only activations cross between stages) and data parallelism (ZeRO/FSDP) "
                                   "outermost.",
                                   fast_link_name(rep), best_path, format_GBps(rep.pcie_GBps)));
  if (best_code.size() > 0 && (classify_code(best_code).type == PathType::pix ||
                               classify_code(best_code).type == PathType::pxb)) {
    out.advice.push_back("If tensor parallelism is unavoidable, keep each group to GPUs behind the same PCIe switch "
                         "(PIX/PXB), not across the CPU.");
  }
}

// The all-to-all groups that lie inside one domain.
std::vector<std::vector<int>> groups_in(const TopologyReport& rep, const std::vector<int>& domain) {
  std::vector<std::vector<int>> groups;
  for (const auto& group : rep.all_to_all_groups) {
    if (std::includes(domain.begin(), domain.end(), group.begin(), group.end())) groups.push_back(group);
  }
  return groups;
}

void advise_all_to_all_domain(const TopologyReport& rep, const std::vector<int>& domain, TopologyAdvice& out) {
  const int size = static_cast<int>(domain.size());
  const int tp = pow2_floor(size);
  const std::string name = fast_link_name(rep);
  out.advice.push_back(fmt::format("GPUs {}: one {} domain, every pair linked directly ({} GB/s per direction per "
                                   "pair). Tensor and expert parallelism up to {} stay on {}{}.",
                                   format_gpu_set(domain), name, format_GBps(slowest_pair_in(rep, domain)), tp, name,
                                   tp != size ? fmt::format(" (largest power of two of {} GPUs)", domain.size())
                                              : ""));
}

// " A ring through all N GPUs exists on NVLink alone ..." at the fastest bandwidth level whose links still form a
// ring through the domain; "" when none does or the domain is too large to search.
std::string ring_note(const TopologyReport& rep, const std::vector<int>& domain, std::size_t largest_group) {
  if (domain.size() > kMaxRingSearchGpus) return "";
  std::set<double> levels;
  for (int a : domain) {
    for (int b : domain) {
      if (a != b && rep.fast_link[a][b]) levels.insert(rep.bandwidth_GBps[a][b]);
    }
  }
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    if (has_ring(domain, rep.bandwidth_GBps, *level)) {
      return fmt::format(" A ring through all {} GPUs exists on {} alone (at {} GB/s per direction, its slowest "
                         "hop), so ring all-reduce over {} GPUs still avoids PCIe, but all-to-all (expert "
                         "parallelism) and tensor parallelism beyond {} reach pairs without a link.",
                         domain.size(), fast_link_name(rep), format_GBps(*level), domain.size(), largest_group);
    }
  }
  return "";
}

// Pairs of all-to-all groups with only some direct links: all-to-all across them waits on the PCIe pairs.
void warn_partly_linked_groups(const TopologyReport& rep, const std::vector<std::vector<int>>& groups,
                               TopologyAdvice& out) {
  const auto& links = rep.topology.links;
  for (std::size_t a = 0; a < groups.size(); ++a) {
    for (std::size_t b = a + 1; b < groups.size(); ++b) {
      int linked = 0;
      int worst = 0;
      std::string worst_code;
      for (int x : groups[a]) {
        for (int y : groups[b]) {
          if (rep.fast_link[x][y]) ++linked;
          else if (rank_of(links[x][y]) >= worst) {
            worst = rank_of(links[x][y]);
            worst_code = links[x][y];
          }
        }
      }
      const int pairs = static_cast<int>(groups[a].size() * groups[b].size());
      if (linked < pairs && !worst_code.empty()) {
        out.warnings.push_back(fmt::format("GPUs {} and {}: only {} of {} pairs have a direct {}; the others go over "
                                           "{}: all-to-all across them (expert parallelism) runs at PCIe speed",
                                           format_gpu_set(groups[a]), format_gpu_set(groups[b]), linked, pairs,
                                           fast_link_name(rep), describe_path(worst_code)));
      }
    }
  }
}

void advise_partly_linked_domain(const TopologyReport& rep, const std::vector<int>& domain,
                                 const std::vector<std::vector<int>>& groups, TopologyAdvice& out) {
  std::size_t largest = 0;
  for (const auto& group : groups) largest = std::max(largest, group.size());
  std::string largest_groups;
  for (const auto& group : groups) {
    if (group.size() == largest) largest_groups += (largest_groups.empty() ? "" : ", ") + format_gpu_set(group);
  }
  out.advice.push_back(fmt::format("GPUs {}: one {} domain but not all-to-all (some pairs have no direct link). The "
                                   "largest fully connected groups have {} GPUs: {}. Keep tensor and expert "
                                   "parallelism to {} inside such a group; put pipeline or data parallelism across "
                                   "the groups.{}",
                                   format_gpu_set(domain), fast_link_name(rep), largest, largest_groups,
                                   pow2_floor(static_cast<int>(largest)), ring_note(rep, domain, largest)));
  warn_partly_linked_groups(rep, groups, out);
}

void advise_parallelism(const TopologyReport& rep, const std::vector<std::vector<int>>& domains,
                        TopologyAdvice& out) {
  const int gpus = gpu_count(rep);
  if (gpus == 1) {
    out.advice.push_back("One GPU: no tensor, expert or pipeline parallelism inside the node; scale out with data "
                         "parallelism over the network.");
    return;
  }
  if (domains.empty()) {
    advise_pcie_only(rep, out);
    return;
  }
  for (const auto& domain : domains) {
    const std::vector<std::vector<int>> groups = groups_in(rep, domain);
    if (groups.size() == 1) advise_all_to_all_domain(rep, domain, out);
    else advise_partly_linked_domain(rep, domain, groups, out);
  }
  if (domains.size() > 1 || domains.front().size() < static_cast<std::size_t>(gpus)) {
    out.advice.push_back(fmt::format("Tensor and expert parallelism must not span {} domains; use pipeline "
                                     "parallelism (or data parallelism) between them.", fast_link_name(rep)));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// What joins the domains, or the PCIe islands

// The best path between two sets of GPUs, as printed.
std::string best_path_between(const TopologyReport& rep, const std::vector<int>& from, const std::vector<int>& to) {
  int best = path_rank(PathType::unknown) + 1;
  std::string code;
  for (int x : from) {
    for (int y : to) {
      if (rank_of(rep.topology.links[x][y]) < best) {
        best = rank_of(rep.topology.links[x][y]);
        code = rep.topology.links[x][y];
      }
    }
  }
  return code;
}

void warn_domains_joined_by_pcie(const TopologyReport& rep, TopologyAdvice& out) {
  const auto& domains = rep.nvlink_domains;
  int shown = 0;
  for (std::size_t a = 0; a < domains.size(); ++a) {
    for (std::size_t b = a + 1; b < domains.size(); ++b) {
      if (++shown > kMaxPairWarnings) return;
      out.warnings.push_back(fmt::format("GPUs {} and {} share only {}: tensor parallelism across them runs at PCIe "
                                         "speed", format_gpu_set(domains[a]), format_gpu_set(domains[b]),
                                         describe_path(best_path_between(rep, domains[a], domains[b]))));
    }
  }
}

// Without fast links: the groups of GPUs joined by better than the node's worst path (one PCIe switch, one
// socket), found as the domains of a matrix that marks those closer pairs as links.
std::vector<std::vector<int>> pcie_islands(const TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  const auto& links = rep.topology.links;
  int worst = 0;
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      if (i != j) worst = std::max(worst, rank_of(links[i][j]));
    }
  }
  Topology closer;
  for (int i = 0; i < gpus; ++i) {
    closer.links.emplace_back();
    for (int j = 0; j < gpus; ++j) {
      const bool close = i != j && rank_of(links[i][j]) < worst;
      closer.links[i].emplace_back(i == j ? "X" : close ? "NV1" : "SYS");
    }
  }
  return nvlink_domains(closer);
}

void warn_island_pairs(const TopologyReport& rep, const std::vector<std::vector<int>>& islands, TopologyAdvice& out) {
  int shown = 0;
  for (std::size_t a = 0; a < islands.size(); ++a) {
    for (std::size_t b = a + 1; b < islands.size(); ++b) {
      if (++shown > kMaxPairWarnings) return;
      // Any pair stands for the islands: every pair across them has the node's worst path.
      const std::string code = rep.topology.links[islands[a][0]][islands[b][0]];
      out.warnings.push_back(fmt::format("GPUs {} and {} share only {}: tensor parallelism across them runs at PCIe "
                                         "speed", format_gpu_set(islands[a]), format_gpu_set(islands[b]),
                                         describe_path(code)));
    }
  }
}

void advise_pcie_islands(const TopologyReport& rep, TopologyAdvice& out) {
  const std::vector<std::vector<int>> islands = pcie_islands(rep);
  warn_island_pairs(rep, islands, out);
  for (const auto& island : islands) {
    if (island.size() < 2) continue;
    int worst = 0;
    std::string worst_code;
    for (int x : island) {
      for (int y : island) {
        if (x != y && rank_of(rep.topology.links[x][y]) >= worst) {
          worst = rank_of(rep.topology.links[x][y]);
          worst_code = rep.topology.links[x][y];
        }
      }
    }
    out.advice.push_back(fmt::format("GPUs {} are the closest over PCIe (worst pair: {}): a tensor-parallel group of "
                                     "{} would run at PCIe speed but without crossing the CPU socket link.",
                                     format_gpu_set(island), describe_path(worst_code), island.size()));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Health, network and host

// A switch-like board (every NVLink code the same NV#, 6 or more) where a few GPUs lack links to most others: a
// degraded NVLink or NVSwitch rather than a design.
void warn_degraded_switch(const TopologyReport& rep, TopologyAdvice& out) {
  const int gpus = gpu_count(rep);
  const int nv = rep.max_nvlinks_per_pair;
  if (!(nv >= 6 && nv == rep.min_nvlinks_per_pair && gpus >= 4)) return;
  auto is_nvlink = [&](int i, int j) { return classify_code(rep.topology.links[i][j]).type == PathType::nvlink; };
  std::vector<int> odd;
  int total = 0;
  for (int i = 0; i < gpus; ++i) {
    int peers = 0;
    for (int j = 0; j < gpus; ++j) {
      peers += (i != j && is_nvlink(i, j)) ? 1 : 0;
      total += is_nvlink(i, j) ? 1 : 0;
    }
    if (peers < gpus - 1 && peers * 2 < gpus) odd.push_back(i);
  }
  if (!odd.empty() && total > 0 && static_cast<int>(odd.size()) * 2 < gpus) {
    out.warnings.push_back(fmt::format("GPU {} show{} no NVLink to most GPUs while the others are all-to-all {}: a "
                                       "degraded NVLink or NVSwitch; check nvidia-smi nvlink -s and the fabric manager",
                                       format_gpu_set(odd), odd.size() == 1 ? "s" : "", fmt::format("NV{}", nv)));
  }
}

// The gap between the fastest GPU-GPU path and each GPU's share of the network decides what crosses nodes.
void advise_network(const TopologyReport& rep, TopologyAdvice& out) {
  const int gpus = gpu_count(rep);
  if (gpus <= 0) return;
  std::string share;
  double per_gpu = rep.nic_GBps;
  const std::size_t nics = rep.topology.nics.size();
  if (rep.compute_nics > 0) {
    per_gpu = rep.nic_GBps * rep.compute_nics / gpus;
    share = fmt::format("{} NIC{} near the GPUs serve{} {} GPU{} ({} GB/s per GPU)", rep.compute_nics,
                        rep.compute_nics == 1 ? "" : "s", rep.compute_nics == 1 ? "s" : "", gpus, gpus == 1 ? "" : "s",
                        format_GBps(per_gpu));
  } else if (nics > 0) {
    // Near is is_near_nic_path, as in the NIC table: none here, so no NIC count can be read off the matrix.
    share = fmt::format("none of the {} NIC{} in the input is near a GPU (no GPU-NIC path better than SYS): one NIC "
                        "per GPU assumed", nics, nics == 1 ? "" : "s");
  } else {
    share = "no NICs in the input: one NIC per GPU assumed";
  }
  if (rep.fastest_gpu_GBps > 0) {
    out.advice.push_back(fmt::format("Network: the fastest GPU-GPU path ({} GB/s per direction) is {:.1f}x each GPU's "
                                     "share of the network ({} GB/s per NIC, {}; {}). Keep tensor and expert "
                                     "parallelism inside the node; put pipeline stages and data parallelism across "
                                     "nodes.",
                                     format_GBps(rep.fastest_gpu_GBps), rep.fastest_gpu_GBps / per_gpu,
                                     format_GBps(rep.nic_GBps), rep.nic_reason, share));
  } else {
    out.advice.push_back(
        fmt::format("Network: {} GB/s per NIC ({}); {}.", format_GBps(rep.nic_GBps), rep.nic_reason, share));
  }
}

// amd-smi's measured figure beside the nominal rates the report uses.
void advise_reported_bandwidth(const TopologyReport& rep, TopologyAdvice& out) {
  double highest = 0;
  for (const auto& row : rep.topology.reported_bandwidth_GBps) {
    for (double GBps : row) highest = std::max(highest, GBps);
  }
  if (highest > 0) {
    out.advice.push_back(fmt::format("amd-smi reports up to {} GB/s between GPUs (NUMA BW table); the bandwidths above "
                                     "are nominal link rates.", format_GBps(highest)));
  }
}

void advise_numa_binding(const TopologyReport& rep, TopologyAdvice& out) {
  std::map<int, std::vector<int>> gpus_by_node;
  for (const auto& gpu : rep.topology.gpus) {
    if (gpu.numa_node) gpus_by_node[*gpu.numa_node].push_back(gpu.index);
  }
  if (gpus_by_node.size() < 2) return;  // one node (or none known): nothing to bind apart
  std::string placement;
  for (const auto& [node, gpus] : gpus_by_node) {
    placement += fmt::format("{}GPUs {} on NUMA node {}", placement.empty() ? "" : ", ", format_gpu_set(gpus), node);
  }
  out.advice.push_back(
      fmt::format("Bind each rank's CPU threads and data loader to its GPU's NUMA node: {}.", placement));
}

}  // namespace

namespace detail {

TopologyAdvice topology_advice(const TopologyReport& report) {
  TopologyAdvice out;
  const std::vector<std::vector<int>> domains = multi_gpu_domains(report);
  advise_parallelism(report, domains, out);
  if (!domains.empty() && report.nvlink_domains.size() > 1) {
    warn_domains_joined_by_pcie(report, out);
  } else if (domains.empty() && gpu_count(report) > 1) {
    advise_pcie_islands(report, out);
  }
  warn_degraded_switch(report, out);
  advise_network(report, out);
  advise_reported_bandwidth(report, out);
  advise_numa_binding(report, out);
  return out;
}

}  // namespace detail

}  // namespace gpuplan
