// From a parsed topology to bandwidths, NVLink domains, GPU-NIC pairing and placement advice. Pure functions.
//
// analyze_topology fills the report in stages, each reading what the earlier ones wrote:
//   1. which GPU and link rates apply (choose_rates, fill_link_rates),
//   2. per-pair bandwidths and the fast links (fill_pair_bandwidths),
//   3. NVLink domains and all-to-all groups (fast_link_domains, all_to_all_groups),
//   4. GPU-NIC pairing and the network speed (pair_gpus_with_nics, choose_nic_speed),
//   5. the advice and its warnings (topology_advice.cpp), which read only the finished report.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string_view>

#include "catalog_ref.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/topology.hpp"
#include "topology/topology_advice.hpp"

namespace gpuplan {

namespace {

using detail::gpu_count;
using detail::rank_of;

// Catalog links used when the GPU is unknown (docs/topology.md): NVLink at NCCL's model rate of an NVLink 3 link
// (NCCL's SM70/SM80 figure), PCIe 4.0 x16, and a 100 Gb/s class NIC (NCCL's own default is of that class).
constexpr std::string_view kUnknownNvlink = "nvlink3";
constexpr std::string_view kUnknownPcie = "pcie4-x16";
constexpr std::string_view kUnknownNic = "ib-edr";

// Bron-Kerbosch calls allowed per clique search: the search is exponential in the worst case and inputs may have
// up to 1024 GPUs, so the work is bounded; past the bound a greedy clique is used.
constexpr long kCliqueSearchBudget = 200000;

using Adjacency = std::vector<std::vector<bool>>;

bool is_fast(PathType type) { return type == PathType::nvlink || type == PathType::xgmi; }

// ---------------------------------------------------------------------------------------------------------------
// Largest clique of the fast-link graph (the all-to-all groups)

// Largest clique containing only `allowed` vertices: Bron-Kerbosch with pivoting, bounded work, greedy past it.
class CliqueSearch {
 public:
  explicit CliqueSearch(const Adjacency& linked) : linked_(linked) {}

  std::vector<int> largest(const std::vector<int>& allowed) {
    std::vector<int> clique;
    expand(clique, allowed, {});
    if (budget_ < 0 || best_.empty()) {
      const std::vector<int> greedy = greedy_clique(allowed);
      if (greedy.size() > best_.size()) best_ = greedy;
    }
    std::sort(best_.begin(), best_.end());
    return best_;
  }

 private:
  // clique: the vertices taken; candidates: those that extend it; excluded: those already tried.
  void expand(std::vector<int>& clique, std::vector<int> candidates, std::vector<int> excluded) {
    if (--budget_ < 0) return;
    if (candidates.empty() && excluded.empty()) {
      if (clique.size() > best_.size()) best_ = clique;
      return;
    }
    if (clique.size() + candidates.size() <= best_.size()) return;  // cannot beat the best found
    const int pivot = choose_pivot(candidates, excluded);
    std::vector<int> branches;
    for (int v : candidates) {
      if (!linked_[pivot][v]) branches.push_back(v);
    }
    for (int v : branches) {
      clique.push_back(v);
      expand(clique, neighbours_among(v, candidates), neighbours_among(v, excluded));
      clique.pop_back();
      candidates.erase(std::find(candidates.begin(), candidates.end(), v));
      excluded.push_back(v);
    }
  }

  // The vertex with the most neighbours among the candidates (the last such one): branching only on its
  // non-neighbours prunes the most.
  int choose_pivot(const std::vector<int>& candidates, const std::vector<int>& excluded) const {
    int pivot = !candidates.empty() ? candidates[0] : excluded[0];
    std::size_t most = 0;
    for (const auto* set : {&candidates, &excluded}) {
      for (int u : *set) {
        std::size_t linked = 0;
        for (int v : candidates) linked += linked_[u][v] ? 1 : 0;
        if (linked >= most) {
          most = linked;
          pivot = u;
        }
      }
    }
    return pivot;
  }

  std::vector<int> neighbours_among(int vertex, const std::vector<int>& set) const {
    std::vector<int> out;
    for (int u : set) {
      if (linked_[vertex][u]) out.push_back(u);
    }
    return out;
  }

  std::vector<int> greedy_clique(const std::vector<int>& allowed) const {
    std::vector<int> greedy;
    for (int v : allowed) {
      if (std::all_of(greedy.begin(), greedy.end(), [&](int u) { return linked_[u][v]; })) greedy.push_back(v);
    }
    return greedy;
  }

  const Adjacency& linked_;
  std::vector<int> best_;
  long budget_ = kCliqueSearchBudget;
};

// ---------------------------------------------------------------------------------------------------------------
// Inputs

void check_inputs(const Topology& topology, const TopologyOptions& options) {
  const int gpus = static_cast<int>(topology.gpus.size());
  const bool square = static_cast<int>(topology.links.size()) == gpus &&
                      std::all_of(topology.links.begin(), topology.links.end(),
                                  [&](const auto& row) { return static_cast<int>(row.size()) == gpus; });
  if (!square) {
    throw InputError("topology", fmt::format("{} GPUs but a {}-row link matrix", gpus, topology.links.size()),
                     "one row and one column per GPU");
  }
  if (options.nic_GBps && !(*options.nic_GBps > 0 && std::isfinite(*options.nic_GBps))) {
    throw InputError("nic_GBps", fmt::format("{}", *options.nic_GBps), "a positive number of GB/s per NIC");
  }
}

// NV# range and xGMI presence, as printed: they identify the board when nothing names the GPU.
void count_fast_codes(TopologyReport& rep) {
  for (const auto& row : rep.topology.links) {
    for (const auto& code_text : row) {
      const PathCode code = classify_code(code_text);
      if (code.type == PathType::nvlink) {
        rep.max_nvlinks_per_pair = std::max(rep.max_nvlinks_per_pair, code.links);
        rep.min_nvlinks_per_pair =
            rep.min_nvlinks_per_pair == 0 ? code.links : std::min(rep.min_nvlinks_per_pair, code.links);
      }
      rep.has_xgmi = rep.has_xgmi || code.type == PathType::xgmi;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Stage 1: which GPU, hence which link rates. Sources in order of trust: --gpu, the GPU names (nvlink -s, then
// the topology's), the nvlink -s per-link rate, then the NV# pattern.

// " = h100-sxm-80gb" when the name found is not the catalog name itself, so the reason shows both.
std::string catalog_name_note(const GpuLinkRates& rates, std::string_view name) {
  return rates.gpu == name ? std::string() : fmt::format(" = {}", rates.gpu);
}

bool rates_from_gpu_option(const TopologyOptions& options, const HardwareCatalog& catalog, TopologyReport& rep) {
  if (options.gpu_name.empty()) return false;
  rep.rates = link_rates_for_gpu(options.gpu_name, &catalog);
  if (!rep.rates) (void)catalog.gpu(options.gpu_name);  // throws InputError (gpu) with the closest names
  if (!rep.rates) throw InputError("gpu", options.gpu_name, "a GPU of the hardware catalog");
  rep.rates_reason = fmt::format("--gpu {}{}", options.gpu_name, catalog_name_note(*rep.rates, options.gpu_name));
  return true;
}

bool rates_from_nvlink_status(const NvlinkStatus& status, const HardwareCatalog& catalog, TopologyReport& rep) {
  for (const auto& gpu : status.gpus) {
    if ((rep.rates = link_rates_for_gpu(gpu.name, &catalog))) {
      rep.rates_reason =
          fmt::format("GPU name '{}' in the nvlink status{}", gpu.name, catalog_name_note(*rep.rates, gpu.name));
      return true;
    }
  }
  // No name the catalog knows: the per-link rate still tells the NVLink generation.
  for (const auto& gpu : status.gpus) {
    if (gpu.per_link_GBps > 0 && (rep.rates = link_rates_for_smi_rate(gpu.per_link_GBps, &catalog))) {
      rep.rates_reason = fmt::format("per-link rate {} GB/s in the nvlink status ({}, taken as {})",
                                     gpu.per_link_GBps, rep.rates->nvlink_link, rep.rates->gpu);
      return true;
    }
  }
  return false;
}

bool rates_from_gpu_names(const HardwareCatalog& catalog, TopologyReport& rep) {
  for (const auto& gpu : rep.topology.gpus) {
    if (!gpu.name.empty() && (rep.rates = link_rates_for_gpu(gpu.name, &catalog))) {
      rep.rates_reason = fmt::format("GPU name '{}'{}", gpu.name, catalog_name_note(*rep.rates, gpu.name));
      return true;
    }
  }
  return false;
}

// What the NV# pattern says when nothing names the GPU: the catalog entry taken for it.
struct PatternGuess {
  std::string_view gpu;
  std::string why;
};

// NVLinks per GPU on a board without NVSwitch where every pair of GPUs has the same NV#: each GPU splits its links
// evenly over its peers (4-GPU HGX H100: NV6 x 3 peers = 18), so NV# x peers counts them. 0 for any other matrix,
// and for a pair, whose NV# alone counts its links (bridges).
int direct_mesh_links_per_gpu(const TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  const int nv = rep.max_nvlinks_per_pair;
  if (gpus < 3 || nv == 0 || rep.min_nvlinks_per_pair != nv) return 0;
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      if (i != j && classify_code(rep.topology.links[i][j]).type != PathType::nvlink) return 0;
    }
  }
  return nv * (gpus - 1);
}

// A direct mesh by its NVLinks per GPU: the generation whose GPUs have that many. NV6 x 3 peers is a Hopper board,
// not an older generation with few links per pair.
std::optional<PatternGuess> guess_from_direct_mesh(const TopologyReport& rep) {
  const int links = direct_mesh_links_per_gpu(rep);
  std::string_view gpu;
  std::string_view generation;
  if (links == 18) {
    gpu = "h100-sxm-80gb";
    generation = "Hopper, NVLink 4; a 4-GPU Blackwell board would look the same: pass --gpu";
  } else if (links == 12) {
    gpu = "a100-sxm-80gb";
    generation = "A100, NVLink 3: 4-GPU HGX A100";
  } else {
    return std::nullopt;
  }
  const int peers = gpu_count(rep) - 1;
  return PatternGuess{gpu, fmt::format("NV{} between every pair of {} GPUs without NVSwitch: {} x {} = {} NVLinks "
                                       "per GPU ({})", rep.max_nvlinks_per_pair, peers + 1,
                                       rep.max_nvlinks_per_pair, peers, links, generation)};
}

std::optional<PatternGuess> guess_from_pattern(const TopologyReport& rep) {
  const int most = rep.max_nvlinks_per_pair;
  const int fewest = rep.min_nvlinks_per_pair;
  const int gpus = gpu_count(rep);
  if (most == 18) {
    return PatternGuess{"h100-sxm-80gb",
                        "NV18 (Hopper: 18 NVLinks per GPU; Blackwell also shows NV18: pass --gpu b200)"};
  }
  if (most == 12) return PatternGuess{"a100-sxm-80gb", "NV12 (A100: 12 NVLinks per GPU)"};
  if (most == 8 && fewest == 8) return PatternGuess{"h800-sxm-80gb", "NV8 (H800: 8 NVLinks per GPU)"};
  if (std::optional<PatternGuess> mesh = guess_from_direct_mesh(rep)) return mesh;
  if (most == 2 && fewest == 1 && gpus == 8) {
    return PatternGuess{"v100-sxm-32gb", "the NV1/NV2 hybrid cube mesh (DGX-1 with V100)"};
  }
  if (most == 1 && gpus == 8) return PatternGuess{"p100-sxm-16gb", "the NV1 hybrid cube mesh (DGX-1 with P100)"};
  if (most == 4 && gpus <= 2) return PatternGuess{"rtx-3090", "an NV4 bridge (RTX 3090 / RTX A6000 class)"};
  if (rep.has_xgmi) return PatternGuess{"mi300x", "the xGMI mesh (assumed MI300-class; pass --gpu otherwise)"};
  return std::nullopt;
}

void rates_from_pattern(const HardwareCatalog& catalog, TopologyReport& rep) {
  const std::optional<PatternGuess> guess = guess_from_pattern(rep);
  if (!guess) return;
  rep.rates = link_rates_for_gpu(guess->gpu, &catalog);
  if (rep.rates) {
    rep.rates_reason = fmt::format("inferred from {}; taken as {}", guess->why, guess->gpu);
  } else {
    rep.warnings.push_back(fmt::format("the catalog has no GPU '{}', inferred from {}", guess->gpu, guess->why));
  }
}

// Sets rep.rates and rep.rates_reason; rep.rates stays nullopt when no source names a GPU of the catalog.
void choose_rates(const TopologyOptions& options, const HardwareCatalog& catalog, TopologyReport& rep) {
  if (rates_from_gpu_option(options, catalog, rep)) return;
  if (options.nvlink_status && rates_from_nvlink_status(*options.nvlink_status, catalog, rep)) return;
  if (rates_from_gpu_names(catalog, rep)) return;
  rates_from_pattern(catalog, rep);
}

// A catalog link's rate, one direction; NCCL's model rate instead when asked and given. 0 when the link is absent.
double catalog_link_rate(const HardwareCatalog& catalog, std::string_view link, bool nccl_model) {
  const LinkSpec* spec = catalog.find_link(link);
  if (spec == nullptr) return 0.0;
  return nccl_model && spec->nccl_model_GBps > 0 ? spec->nccl_model_GBps : spec->per_direction_GBps;
}

// The NVLink and PCIe rates the pairs use: the chosen GPU's, else the documented fallbacks (with a warning).
void fill_link_rates(const HardwareCatalog& catalog, TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  if (!rep.rates) {
    rep.rates_reason = "unknown";
    rep.nvlink_per_link_GBps = catalog_link_rate(catalog, kUnknownNvlink, true);
    rep.pcie_GBps = catalog_link_rate(catalog, kUnknownPcie, false);
    if (rep.max_nvlinks_per_pair > 0) {
      rep.warnings.push_back(fmt::format("GPU generation unknown: NVLink assumed at {} GB/s per link per direction "
                                         "(NCCL's model rate of links.{}); pass --gpu or --nvlink for exact rates",
                                         rep.nvlink_per_link_GBps, kUnknownNvlink));
    }
    if (gpus > 1) {
      rep.warnings.push_back(fmt::format("GPU generation unknown: PCIe assumed 4.0 x16 ({} GB/s per direction, "
                                         "links.{}); pass --gpu for the right generation", rep.pcie_GBps,
                                         kUnknownPcie));
    }
    return;
  }
  rep.nvlink_per_link_GBps = rep.rates->nvlink_per_link_GBps;
  rep.pcie_GBps = rep.rates->pcie_GBps;
  if (rep.pcie_GBps <= 0 && gpus > 1) {
    rep.pcie_GBps = catalog_link_rate(catalog, kUnknownPcie, false);
    rep.warnings.push_back(fmt::format("the catalog gives {} no host link: PCIe assumed 4.0 x16 ({} GB/s per "
                                       "direction, links.{})", rep.rates->gpu, rep.pcie_GBps, kUnknownPcie));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Stage 2: bandwidth per pair

// Active NVLinks per GPU (nvlink status) against the links the matrix implies: the sum of NV# over peers, or on a
// switch board (the sum exceeds the GPU's links) the NV# itself. Fewer active links scale the GPU's pairs down in
// proportion (which link leads to which peer is not printed).
struct ActiveLinks {
  std::vector<double> factor;  // per GPU: active / implied NVLinks when fewer are active, else 1
  std::vector<int> active;     // per GPU: active NVLinks as the status lists them; -1 when it does not
};

ActiveLinks active_nvlinks(const TopologyOptions& options, const TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  ActiveLinks links{std::vector<double>(gpus, 1.0), std::vector<int>(gpus, -1)};
  if (!options.nvlink_status) return links;
  const int links_per_gpu = rep.rates ? rep.rates->nvlinks_per_gpu : 0;
  for (const auto& status : options.nvlink_status->gpus) {
    if (status.gpu < 0 || status.gpu >= gpus) continue;
    int sum = 0;
    int most = 0;
    for (int peer = 0; peer < gpus; ++peer) {
      const PathCode code = classify_code(rep.topology.links[status.gpu][peer]);
      if (code.type == PathType::nvlink && peer != status.gpu) {
        sum += code.links;
        most = std::max(most, code.links);
      }
    }
    const int implied = links_per_gpu > 0 && sum > links_per_gpu ? most : sum;
    links.active[status.gpu] = status.links_active;
    if (implied > 0 && status.links_active < implied) {
      links.factor[status.gpu] = static_cast<double>(status.links_active) / implied;
    }
  }
  return links;
}

// One ordered pair's bandwidth per direction, and whether a fast link (NVLink, xGMI) carries it.
struct PairLink {
  double GBps = 0;
  bool fast = false;
};

PairLink pair_link(const PathCode& code, double nvlink_factor, const TopologyReport& rep) {
  switch (code.type) {
    case PathType::nvlink: {
      const double GBps = code.links * nvlink_factor * rep.nvlink_per_link_GBps;
      // No bandwidth left (inactive links, or a GPU without NVLink): the pair falls back to PCIe.
      if (GBps <= 0) return {rep.pcie_GBps, false};
      return {GBps, true};
    }
    case PathType::xgmi:
      return {rep.nvlink_per_link_GBps, true};  // nominal, like NVLink; amd-smi's NUMA BW figure is in a note
    case PathType::pix:
    case PathType::pxb:
    case PathType::phb:
    case PathType::node:
    case PathType::sys:
    case PathType::pcie: return {rep.pcie_GBps, false};
    case PathType::self:
    case PathType::unknown: break;
  }
  return {0, false};
}

// Fills bandwidth_GBps and fast_link, and warns about the GPUs whose inactive NVLinks scaled their pairs.
void fill_pair_bandwidths(const ActiveLinks& links, TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  rep.bandwidth_GBps.assign(gpus, std::vector<double>(gpus, 0.0));
  rep.fast_link.assign(gpus, std::vector<bool>(gpus, false));
  std::set<int> scaled;
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      if (i == j) continue;
      const PathCode code = classify_code(rep.topology.links[i][j]);
      if (code.type == PathType::nvlink) {
        for (int gpu : {i, j}) {
          if (links.factor[gpu] < 1.0) scaled.insert(gpu);
        }
      }
      const PairLink pair = pair_link(code, std::min(links.factor[i], links.factor[j]), rep);
      rep.bandwidth_GBps[i][j] = pair.GBps;
      rep.fast_link[i][j] = pair.fast;
    }
  }
  for (int gpu : scaled) {
    rep.warnings.push_back(fmt::format("GPU{}: only {} active NVLink{} (nvlink status) where the matrix implies "
                                       "more: its NVLink bandwidth is scaled by {:.2f}", gpu, links.active[gpu],
                                       links.active[gpu] == 1 ? "" : "s", links.factor[gpu]));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Stage 3: NVLink domains and all-to-all groups

// Domains from the links that carry traffic both ways (inactive links removed), not from the codes as printed.
std::vector<std::vector<int>> fast_link_domains(const TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  Topology effective;
  effective.links.assign(gpus, std::vector<std::string>(gpus, "SYS"));
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      effective.links[i][j] = i == j ? "X" : (rep.fast_link[i][j] && rep.fast_link[j][i] ? "NV1" : "SYS");
    }
  }
  return nvlink_domains(effective);
}

// Disjoint all-to-all groups covering each domain, largest first, then sorted.
std::vector<std::vector<int>> all_to_all_groups(const TopologyReport& rep) {
  std::vector<std::vector<int>> groups;
  for (const auto& domain : rep.nvlink_domains) {
    std::vector<int> left = domain;
    while (!left.empty()) {
      std::vector<int> clique = CliqueSearch(rep.fast_link).largest(left);
      if (clique.empty()) clique = {left.front()};
      for (int v : clique) left.erase(std::find(left.begin(), left.end(), v));
      groups.push_back(clique);
    }
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

int max_tp_in_domain(const TopologyReport& rep) {
  std::size_t biggest = 1;
  for (const auto& group : rep.all_to_all_groups) biggest = std::max(biggest, group.size());
  return detail::pow2_floor(static_cast<int>(biggest));
}

double fastest_pair(const TopologyReport& rep) {
  double fastest = 0;
  for (const auto& row : rep.bandwidth_GBps) {
    for (double GBps : row) fastest = std::max(fastest, GBps);
  }
  return fastest;
}

// ---------------------------------------------------------------------------------------------------------------
// Stage 4: GPU-NIC pairing and network speed

// Per NIC, the GPUs at its best distance when that path is near (is_near_nic_path); none for a NIC that reaches
// every GPU only across the CPU (storage, management, or every NIC of a Grace tray).
std::vector<std::vector<int>> nearest_gpus_per_nic(const TopologyReport& rep) {
  const int gpus = gpu_count(rep);
  std::vector<std::vector<int>> nearest(rep.topology.nics.size());
  for (std::size_t nic = 0; nic < rep.topology.nics.size(); ++nic) {
    const auto& codes = rep.topology.nics[nic].gpu_codes;
    int best = path_rank(PathType::unknown);
    for (int gpu = 0; gpu < gpus; ++gpu) {
      if (is_near_nic_path(codes[gpu])) best = std::min(best, rank_of(codes[gpu]));
    }
    for (int gpu = 0; gpu < gpus; ++gpu) {
      if (is_near_nic_path(codes[gpu]) && rank_of(codes[gpu]) == best) nearest[nic].push_back(gpu);
    }
  }
  return nearest;
}

// Each GPU's closest NIC, spreading ties over the NICs taken least so far (GPUs sharing a switch with two NICs use
// both). Counts as compute NICs those that some GPU takes over a near path, the same rule as the NIC table's.
// Returns the GPUs whose closest NIC is far (across the CPU socket link).
std::vector<int> assign_nearest_nics(TopologyReport& rep) {
  const auto& nics = rep.topology.nics;
  const int gpus = gpu_count(rep);
  rep.nearest_nic.assign(gpus, -1);
  std::vector<int> taken(nics.size(), 0);
  std::vector<bool> near_to_a_gpu(nics.size(), false);
  std::vector<int> via_sys;
  for (int gpu = 0; gpu < gpus; ++gpu) {
    int best = path_rank(PathType::unknown);
    for (const auto& nic : nics) best = std::min(best, rank_of(nic.gpu_codes[gpu]));
    if (best >= path_rank(PathType::unknown)) continue;
    int pick = -1;
    for (std::size_t nic = 0; nic < nics.size(); ++nic) {
      if (rank_of(nics[nic].gpu_codes[gpu]) != best) continue;
      if (pick < 0 || taken[nic] < taken[pick]) pick = static_cast<int>(nic);
    }
    rep.nearest_nic[gpu] = pick;
    ++taken[pick];
    if (is_near_nic_path(nics[pick].gpu_codes[gpu])) near_to_a_gpu[pick] = true;
    else via_sys.push_back(gpu);
  }
  rep.compute_nics = static_cast<int>(std::count(near_to_a_gpu.begin(), near_to_a_gpu.end(), true));
  return via_sys;
}

void pair_gpus_with_nics(TopologyReport& rep) {
  rep.nic_nearest_gpus = nearest_gpus_per_nic(rep);
  const std::vector<int> via_sys = assign_nearest_nics(rep);
  if (!via_sys.empty()) {
    rep.warnings.push_back(fmt::format("GPU{} {} reach{} the nearest NIC only through the CPU socket link (SYS): "
                                       "GPUDirect RDMA crosses sockets", via_sys.size() == 1 ? "" : "s",
                                       format_gpu_set(via_sys), via_sys.size() == 1 ? "es" : ""));
  }
}

// --nic-GBps, else the usual NIC of the GPU's systems, else a 100 Gb/s class NIC (NCCL's default is of that class).
void choose_nic_speed(const TopologyOptions& options, const HardwareCatalog& catalog, TopologyReport& rep) {
  if (options.nic_GBps) {
    rep.nic_GBps = *options.nic_GBps;
    rep.nic_reason = "--nic-GBps";
    return;
  }
  if (rep.rates && rep.rates->nic_GBps > 0) {
    rep.nic_GBps = rep.rates->nic_GBps;
    rep.nic_reason = fmt::format("{} (links.{}) assumed for {} systems; pass --nic-GBps", rep.rates->nic_name,
                                 rep.rates->nic_link, rep.rates->generation);
    return;
  }
  rep.nic_GBps = catalog_link_rate(catalog, kUnknownNic, false);
  const LinkSpec* nic = catalog.find_link(kUnknownNic);
  rep.nic_reason = fmt::format("{} (links.{}) assumed, the class of NCCL's default NIC speed; pass --nic-GBps",
                               nic != nullptr ? nic->description : std::string("a 100 Gb/s NIC"), kUnknownNic);
  if (!(rep.nic_GBps > 0)) {
    throw InputError("catalog", fmt::format("no link '{}' for the default NIC", kUnknownNic),
                     "pass --nic-GBps or keep links." + std::string(kUnknownNic) + " in the catalog");
  }
}

}  // namespace

std::string format_gpu_set(const std::vector<int>& gpus) { return format_id_list(gpus); }

std::string format_id_list(const std::vector<int>& ids) {
  std::vector<int> s = ids;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t j = i;
    while (j + 1 < s.size() && s[j + 1] == s[j] + 1) ++j;
    if (!out.empty()) out += ",";
    if (j == i) out += std::to_string(s[i]);
    else if (j == i + 1) out += fmt::format("{},{}", s[i], s[j]);
    else out += fmt::format("{}-{}", s[i], s[j]);
    i = j + 1;
  }
  return out;
}

std::vector<std::vector<int>> nvlink_domains(const Topology& topology) {
  const int gpus = static_cast<int>(topology.links.size());
  std::vector<int> parent(gpus);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> find = [&](int a) { return parent[a] == a ? a : parent[a] = find(parent[a]); };
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus && j < static_cast<int>(topology.links[i].size()); ++j) {
      if (i != j && is_fast(classify_code(topology.links[i][j]).type)) parent[find(i)] = find(j);
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < gpus; ++i) groups[find(i)].push_back(i);
  std::vector<std::vector<int>> out;
  for (auto& [root, members] : groups) out.push_back(members);
  std::sort(out.begin(), out.end());
  return out;
}

TopologyReport analyze_topology(const Topology& topology, const TopologyOptions& options) {
  check_inputs(topology, options);
  TopologyReport rep;
  rep.topology = topology;
  rep.warnings = topology.warnings;
  if (options.nvlink_status) {
    for (const auto& w : options.nvlink_status->warnings) rep.warnings.push_back("nvlink status: " + w);
  }
  count_fast_codes(rep);

  // 1. Rates.
  const HardwareCatalog& catalog = detail::topology_catalog(options.catalog);
  choose_rates(options, catalog, rep);
  fill_link_rates(catalog, rep);

  // 2. Bandwidth per pair, per direction.
  fill_pair_bandwidths(active_nvlinks(options, rep), rep);

  // 3. Domains and all-to-all groups.
  rep.nvlink_domains = fast_link_domains(rep);
  rep.all_to_all_groups = all_to_all_groups(rep);
  rep.max_tp_in_domain = max_tp_in_domain(rep);
  rep.fastest_gpu_GBps = fastest_pair(rep);

  // 4. Network.
  pair_gpus_with_nics(rep);
  choose_nic_speed(options, catalog, rep);

  // 5. Advice, from the report alone.
  detail::TopologyAdvice advice = detail::topology_advice(rep);
  for (auto& line : advice.advice) rep.advice.push_back(std::move(line));
  for (auto& line : advice.warnings) rep.warnings.push_back(std::move(line));
  return rep;
}

}  // namespace gpuplan
