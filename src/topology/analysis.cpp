// From a parsed topology to bandwidths, NVLink domains, GPU-NIC pairing and placement advice. Pure functions.
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

namespace gpuplan {

namespace {

// Catalog links used when the GPU is unknown (docs/topology.md): NVLink at NCCL's model rate of an NVLink 3 link
// (NCCL's SM70/SM80 figure), PCIe 4.0 x16, and a 100 Gb/s class NIC (NCCL's own default is of that class).
constexpr std::string_view kUnknownNvlink = "nvlink3";
constexpr std::string_view kUnknownPcie = "pcie4-x16";
constexpr std::string_view kUnknownNic = "ib-edr";

// What the NV# pattern says when nothing names the GPU: the catalog entry taken for it.
struct PatternGuess {
  std::string_view gpu;
  std::string_view why;
};

bool is_fast(PathType t) { return t == PathType::nvlink || t == PathType::xgmi; }

struct Graph {
  int n = 0;
  std::vector<std::vector<char>> adj;  // fast direct link
};

// Largest clique containing only `allowed` vertices (Bron-Kerbosch with pivoting, bounded work; greedy past it).
std::vector<int> max_clique(const Graph& g, const std::vector<int>& allowed) {
  std::vector<int> best;
  long budget = 200000;
  std::function<void(std::vector<int>&, std::vector<int>, std::vector<int>)> bk =
      [&](std::vector<int>& r, std::vector<int> p, std::vector<int> x) {
        if (--budget < 0) return;
        if (p.empty() && x.empty()) {
          if (r.size() > best.size()) best = r;
          return;
        }
        if (r.size() + p.size() <= best.size()) return;
        int pivot = !p.empty() ? p[0] : x[0];
        std::size_t most = 0;
        for (const auto& set : {p, x}) {
          for (int u : set) {
            std::size_t c = 0;
            for (int v : p) c += g.adj[u][v] ? 1 : 0;
            if (c >= most) {
              most = c;
              pivot = u;
            }
          }
        }
        std::vector<int> cand;
        for (int v : p) {
          if (!g.adj[pivot][v]) cand.push_back(v);
        }
        for (int v : cand) {
          std::vector<int> np, nx;
          for (int u : p) {
            if (g.adj[v][u]) np.push_back(u);
          }
          for (int u : x) {
            if (g.adj[v][u]) nx.push_back(u);
          }
          r.push_back(v);
          bk(r, np, nx);
          r.pop_back();
          p.erase(std::find(p.begin(), p.end(), v));
          x.push_back(v);
        }
      };
  std::vector<int> r;
  bk(r, allowed, {});
  if (budget < 0 || best.empty()) {  // greedy fallback
    std::vector<int> greedy;
    for (int v : allowed) {
      if (std::all_of(greedy.begin(), greedy.end(), [&](int u) { return g.adj[u][v] != 0; })) greedy.push_back(v);
    }
    if (greedy.size() > best.size()) best = greedy;
  }
  std::sort(best.begin(), best.end());
  return best;
}

// Whether a Hamiltonian cycle exists over `members` using edges with bandwidth >= threshold (members <= 16).
bool has_ring(const std::vector<int>& members, const std::vector<std::vector<double>>& bw, double threshold) {
  const int m = static_cast<int>(members.size());
  if (m <= 1) return true;
  if (m == 2) return bw[members[0]][members[1]] >= threshold;
  if (m > 16) return false;
  auto ok = [&](int a, int b) { return bw[members[a]][members[b]] >= threshold; };
  std::vector<std::vector<char>> dp(std::size_t{1} << m, std::vector<char>(m, 0));
  dp[1][0] = 1;
  for (std::size_t mask = 1; mask < dp.size(); ++mask) {
    if (!(mask & 1)) continue;
    for (int v = 0; v < m; ++v) {
      if (!dp[mask][v]) continue;
      for (int w = 1; w < m; ++w) {
        if (!(mask & (std::size_t{1} << w)) && ok(v, w)) dp[mask | (std::size_t{1} << w)][w] = 1;
      }
    }
  }
  const std::size_t full = dp.size() - 1;
  for (int v = 1; v < m; ++v) {
    if (dp[full][v] && ok(v, 0)) return true;
  }
  return false;
}

int pow2_floor(int x) {
  int p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

std::string gbps(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

}  // namespace

std::string format_gpu_set(const std::vector<int>& gpus) {
  std::vector<int> s = gpus;
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
  const int n = static_cast<int>(topology.links.size());
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> find = [&](int a) { return parent[a] == a ? a : parent[a] = find(parent[a]); };
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n && j < static_cast<int>(topology.links[i].size()); ++j) {
      if (i != j && is_fast(classify_code(topology.links[i][j]).type)) parent[find(i)] = find(j);
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < n; ++i) groups[find(i)].push_back(i);
  std::vector<std::vector<int>> out;
  for (auto& [root, members] : groups) out.push_back(members);
  std::sort(out.begin(), out.end());
  return out;
}

TopologyReport analyze_topology(const Topology& topology, const TopologyOptions& options) {
  TopologyReport rep;
  rep.topology = topology;
  rep.warnings = topology.warnings;
  const int n = static_cast<int>(topology.gpus.size());
  if (static_cast<int>(topology.links.size()) != n ||
      std::any_of(topology.links.begin(), topology.links.end(), [&](const auto& r) { return static_cast<int>(r.size()) != n; })) {
    throw InputError("topology", fmt::format("{} GPUs but a {}-row link matrix", n, topology.links.size()),
                     "one row and one column per GPU");
  }
  if (options.nic_GBps && !(*options.nic_GBps > 0 && std::isfinite(*options.nic_GBps))) {
    throw InputError("--nic-GBps", fmt::format("{}", *options.nic_GBps), "a positive number of GB/s per NIC");
  }
  if (options.nvlink_status) {
    for (const auto& w : options.nvlink_status->warnings) rep.warnings.push_back("nvlink status: " + w);
  }

  // NVLink counts as printed.
  int max_nv = 0;
  int min_nv = 0;
  bool any_xgmi = false;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const PathCode c = classify_code(topology.links[i][j]);
      if (c.type == PathType::nvlink) {
        max_nv = std::max(max_nv, c.links);
        min_nv = min_nv == 0 ? c.links : std::min(min_nv, c.links);
      }
      any_xgmi = any_xgmi || c.type == PathType::xgmi;
    }
  }

  // The GPU: --gpu, then names (nvlink -s, NVML), then the nvlink -s rate, then the NV# pattern. Rates from the
  // catalog entry found.
  const HardwareCatalog& catalog = detail::topology_catalog(options.catalog);
  auto named = [&](const GpuLinkRates& r, std::string_view name) {
    return r.gpu == name ? std::string() : fmt::format(" = {}", r.gpu);
  };
  if (!options.gpu_name.empty()) {
    rep.rates = link_rates_for_gpu(options.gpu_name, &catalog);
    if (!rep.rates) (void)catalog.gpu(options.gpu_name);  // throws InputError (--gpu) with the closest names
    if (!rep.rates) throw InputError("--gpu", options.gpu_name, "a GPU of the hardware catalog");
    rep.rates_reason = fmt::format("--gpu {}{}", options.gpu_name, named(*rep.rates, options.gpu_name));
  }
  if (!rep.rates && options.nvlink_status) {
    for (const auto& g : options.nvlink_status->gpus) {
      if ((rep.rates = link_rates_for_gpu(g.name, &catalog))) {
        rep.rates_reason = fmt::format("GPU name '{}' in the nvlink status{}", g.name, named(*rep.rates, g.name));
        break;
      }
    }
    if (!rep.rates) {
      for (const auto& g : options.nvlink_status->gpus) {
        if (g.per_link_GBps > 0 && (rep.rates = link_rates_for_smi_rate(g.per_link_GBps, &catalog))) {
          rep.rates_reason = fmt::format("per-link rate {} GB/s in the nvlink status ({}, taken as {})",
                                         g.per_link_GBps, rep.rates->nvlink_link, rep.rates->gpu);
          break;
        }
      }
    }
  }
  if (!rep.rates) {
    for (const auto& g : topology.gpus) {
      if (!g.name.empty() && (rep.rates = link_rates_for_gpu(g.name, &catalog))) {
        rep.rates_reason = fmt::format("GPU name '{}'{}", g.name, named(*rep.rates, g.name));
        break;
      }
    }
  }
  if (!rep.rates) {
    std::optional<PatternGuess> guess;
    if (max_nv == 18) {
      guess = PatternGuess{"h100-sxm-80gb", "NV18 (Hopper: 18 NVLinks per GPU; Blackwell also shows NV18: pass --gpu b200)"};
    } else if (max_nv == 12) {
      guess = PatternGuess{"a100-sxm-80gb", "NV12 (A100: 12 NVLinks per GPU)"};
    } else if (max_nv == 8 && min_nv == 8) {
      guess = PatternGuess{"h800-sxm-80gb", "NV8 (H800: 8 NVLinks per GPU)"};
    } else if (max_nv == 2 && min_nv == 1 && n == 8) {
      guess = PatternGuess{"v100-sxm-32gb", "the NV1/NV2 hybrid cube mesh (DGX-1 with V100)"};
    } else if (max_nv == 1 && n == 8) {
      guess = PatternGuess{"p100-sxm-16gb", "the NV1 hybrid cube mesh (DGX-1 with P100)"};
    } else if (max_nv == 4 && n <= 2) {
      guess = PatternGuess{"rtx-3090", "an NV4 bridge (RTX 3090 / RTX A6000 class)"};
    } else if (any_xgmi) {
      guess = PatternGuess{"mi300x", "the xGMI mesh (assumed MI300-class; pass --gpu otherwise)"};
    }
    if (guess) {
      rep.rates = link_rates_for_gpu(guess->gpu, &catalog);
      if (rep.rates) rep.rates_reason = fmt::format("inferred from {}; taken as {}", guess->why, guess->gpu);
      else rep.warnings.push_back(fmt::format("the catalog has no GPU '{}', inferred from {}", guess->gpu, guess->why));
    }
  }
  auto catalog_rate = [&](std::string_view link, bool nccl_model) {
    const LinkSpec* l = catalog.find_link(link);
    if (l == nullptr) return 0.0;
    return nccl_model && l->nccl_model_GBps > 0 ? l->nccl_model_GBps : l->per_direction_GBps;
  };
  double nvlink_GBps = rep.rates ? rep.rates->nvlink_per_link_GBps : 0;
  double pcie_GBps = rep.rates ? rep.rates->pcie_GBps : 0;
  if (!rep.rates) {
    rep.rates_reason = "unknown";
    nvlink_GBps = catalog_rate(kUnknownNvlink, true);
    pcie_GBps = catalog_rate(kUnknownPcie, false);
    if (max_nv > 0) {
      rep.warnings.push_back(fmt::format("GPU generation unknown: NVLink assumed at {} GB/s per link per direction "
                                         "(NCCL's model rate of links.{}); pass --gpu or --nvlink for exact rates",
                                         nvlink_GBps, kUnknownNvlink));
    }
    if (n > 1) {
      rep.warnings.push_back(fmt::format("GPU generation unknown: PCIe assumed 4.0 x16 ({} GB/s per direction, "
                                         "links.{}); pass --gpu for the right generation", pcie_GBps, kUnknownPcie));
    }
  } else if (pcie_GBps <= 0 && n > 1) {
    pcie_GBps = catalog_rate(kUnknownPcie, false);
    rep.warnings.push_back(fmt::format("the catalog gives {} no host link: PCIe assumed 4.0 x16 ({} GB/s per "
                                       "direction, links.{})", rep.rates->gpu, pcie_GBps, kUnknownPcie));
  }

  // Active NVLinks per GPU (nvlink status) against the links the matrix implies: the sum of NV# over peers, or on
  // a switch board (the sum exceeds the GPU's links) the NV# itself. Fewer active links scale the GPU's pairs down
  // in proportion (which link leads to which peer is not printed).
  std::vector<double> link_factor(n, 1.0);
  std::vector<int> active(n, -1);
  if (options.nvlink_status) {
    for (const auto& g : options.nvlink_status->gpus) {
      if (g.gpu < 0 || g.gpu >= n) continue;
      int sum = 0;
      int most = 0;
      for (int j = 0; j < n; ++j) {
        const PathCode c = classify_code(topology.links[g.gpu][j]);
        if (c.type == PathType::nvlink && j != g.gpu) {
          sum += c.links;
          most = std::max(most, c.links);
        }
      }
      const int per_gpu = rep.rates ? rep.rates->nvlinks_per_gpu : 0;
      const int claimed = per_gpu > 0 && sum > per_gpu ? most : sum;
      active[g.gpu] = g.links_active;
      if (claimed > 0 && g.links_active < claimed) link_factor[g.gpu] = static_cast<double>(g.links_active) / claimed;
    }
  }

  // Bandwidth per pair, per direction.
  rep.bandwidth_GBps.assign(n, std::vector<double>(n, 0.0));
  Graph graph;
  graph.n = n;
  graph.adj.assign(n, std::vector<char>(n, 0));
  std::set<int> capped;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const PathCode c = classify_code(topology.links[i][j]);
      double b = 0;
      switch (c.type) {
        case PathType::nvlink: {
          const double f = std::min(link_factor[i], link_factor[j]);
          for (int g : {i, j}) {
            if (link_factor[g] < 1.0) capped.insert(g);
          }
          b = c.links * f * nvlink_GBps;
          if (b <= 0) b = pcie_GBps;
          else graph.adj[i][j] = 1;
          break;
        }
        case PathType::xgmi:
          b = nvlink_GBps;  // nominal, like NVLink; amd-smi's NUMA BW figure is reported in a note
          graph.adj[i][j] = 1;
          break;
        case PathType::pix:
        case PathType::pxb:
        case PathType::phb:
        case PathType::node:
        case PathType::sys:
        case PathType::pcie: b = pcie_GBps; break;
        case PathType::self:
        case PathType::unknown: b = 0; break;
      }
      rep.bandwidth_GBps[i][j] = b;
    }
  }
  for (int g : capped) {
    rep.warnings.push_back(fmt::format("GPU{}: only {} active NVLink{} (nvlink status) where the matrix implies "
                                       "more: its NVLink bandwidth is scaled by {:.2f}", g, active[g],
                                       active[g] == 1 ? "" : "s", link_factor[g]));
  }
  // Domains from the links that carry traffic.
  {
    Topology effective;
    effective.links.assign(n, std::vector<std::string>(n, "SYS"));
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) effective.links[i][j] = i == j ? "X" : (graph.adj[i][j] && graph.adj[j][i] ? "NV1" : "SYS");
    }
    rep.nvlink_domains = nvlink_domains(effective);
  }
  // Disjoint all-to-all groups covering each domain, largest first.
  for (const auto& d : rep.nvlink_domains) {
    std::vector<int> left = d;
    while (!left.empty()) {
      std::vector<int> c = max_clique(graph, left);
      if (c.empty()) c = {left.front()};
      for (int v : c) left.erase(std::find(left.begin(), left.end(), v));
      rep.all_to_all_groups.push_back(c);
    }
  }
  std::sort(rep.all_to_all_groups.begin(), rep.all_to_all_groups.end());
  std::size_t biggest = 1;
  for (const auto& g : rep.all_to_all_groups) biggest = std::max(biggest, g.size());
  rep.max_tp_in_domain = pow2_floor(static_cast<int>(biggest));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) rep.fastest_gpu_GBps = std::max(rep.fastest_gpu_GBps, rep.bandwidth_GBps[i][j]);
  }

  // GPU-NIC pairing: the closest NIC, spreading ties over NICs not yet taken.
  const auto& nics = topology.nics;
  rep.nic_nearest_gpus.assign(nics.size(), {});
  rep.nearest_nic.assign(n, -1);
  std::vector<int> taken(nics.size(), 0);
  std::vector<int> via_sys;
  for (std::size_t c = 0; c < nics.size(); ++c) {
    int best = path_rank(PathType::sys);
    for (int i = 0; i < n; ++i) best = std::min(best, path_rank(classify_code(nics[c].gpu_codes[i]).type));
    if (best >= path_rank(PathType::sys)) continue;  // a NIC far from every GPU (storage, management)
    for (int i = 0; i < n; ++i) {
      if (path_rank(classify_code(nics[c].gpu_codes[i]).type) == best) rep.nic_nearest_gpus[c].push_back(i);
    }
  }
  for (int i = 0; i < n; ++i) {
    int best_rank = path_rank(PathType::unknown);
    for (const auto& nic : nics) best_rank = std::min(best_rank, path_rank(classify_code(nic.gpu_codes[i]).type));
    if (best_rank >= path_rank(PathType::unknown)) continue;
    int pick = -1;
    for (std::size_t c = 0; c < nics.size(); ++c) {
      if (path_rank(classify_code(nics[c].gpu_codes[i]).type) != best_rank) continue;
      if (pick < 0 || taken[c] < taken[pick]) pick = static_cast<int>(c);
    }
    rep.nearest_nic[i] = pick;
    ++taken[pick];
    if (best_rank >= path_rank(PathType::sys)) via_sys.push_back(i);
  }
  rep.compute_nics = static_cast<int>(std::count_if(taken.begin(), taken.end(), [](int t) { return t > 0; }));
  if (!via_sys.empty()) {
    rep.warnings.push_back(fmt::format("GPU{} {} reach{} the nearest NIC only through the CPU socket link (SYS): "
                                       "GPUDirect RDMA crosses sockets", via_sys.size() == 1 ? "" : "s", format_gpu_set(via_sys),
                                       via_sys.size() == 1 ? "es" : ""));
  }

  // Network speed.
  if (options.nic_GBps) {
    rep.nic_GBps = *options.nic_GBps;
    rep.nic_reason = "--nic-GBps";
  } else if (rep.rates && rep.rates->nic_GBps > 0) {
    rep.nic_GBps = rep.rates->nic_GBps;
    rep.nic_reason = fmt::format("{} (links.{}) assumed for {} systems; pass --nic-GBps", rep.rates->nic_name,
                                 rep.rates->nic_link, rep.rates->generation);
  } else {
    rep.nic_GBps = catalog_rate(kUnknownNic, false);
    const LinkSpec* l = catalog.find_link(kUnknownNic);
    rep.nic_reason = fmt::format("{} (links.{}) assumed, the class of NCCL's default NIC speed; pass --nic-GBps",
                                 l != nullptr ? l->description : std::string("a 100 Gb/s NIC"), kUnknownNic);
    if (!(rep.nic_GBps > 0)) {
      throw InputError("catalog", fmt::format("no link '{}' for the default NIC", kUnknownNic),
                       "pass --nic-GBps or keep links." + std::string(kUnknownNic) + " in the catalog");
    }
  }

  // ---- Advice ----
  auto& adv = rep.advice;
  std::vector<std::vector<int>> multi;
  for (const auto& d : rep.nvlink_domains) {
    if (d.size() > 1) multi.push_back(d);
  }
  const std::string fast_name = any_xgmi ? "xGMI" : "NVLink";
  auto min_bw_in = [&](const std::vector<int>& g) {
    double m = 0;
    for (int a : g) {
      for (int b : g) {
        if (a != b) m = m == 0 ? rep.bandwidth_GBps[a][b] : std::min(m, rep.bandwidth_GBps[a][b]);
      }
    }
    return m;
  };
  if (n == 1) {
    adv.push_back("One GPU: no tensor, expert or pipeline parallelism inside the node; scale out with data "
                  "parallelism over the network.");
  } else if (multi.empty()) {
    int best = path_rank(PathType::unknown);
    std::string best_code;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i != j && path_rank(classify_code(topology.links[i][j]).type) < best) {
          best = path_rank(classify_code(topology.links[i][j]).type);
          best_code = topology.links[i][j];
        }
      }
    }
    adv.push_back(fmt::format("No {} between any GPUs: every pair communicates over PCIe (best path: {}), about {} GB/s "
                              "per direction. Tensor and expert parallelism would pay PCIe speed on every layer: "
                              "prefer tensor parallelism 1, with pipeline parallelism across these GPUs (only "
                              "activations cross between stages) and data parallelism (ZeRO/FSDP) outermost.",
                              fast_name, best_code.empty() ? std::string("unknown") : describe_path(best_code),
                              gbps(pcie_GBps)));
    if (best_code.size() > 0 && (classify_code(best_code).type == PathType::pix ||
                                 classify_code(best_code).type == PathType::pxb)) {
      adv.push_back("If tensor parallelism is unavoidable, keep each group to GPUs behind the same PCIe switch "
                    "(PIX/PXB), not across the CPU.");
    }
  } else {
    for (const auto& d : multi) {
      std::vector<std::vector<int>> groups;
      for (const auto& g : rep.all_to_all_groups) {
        if (std::includes(d.begin(), d.end(), g.begin(), g.end())) groups.push_back(g);
      }
      std::size_t gmax = 0;
      for (const auto& g : groups) gmax = std::max(gmax, g.size());
      if (groups.size() == 1) {
        adv.push_back(fmt::format("GPUs {}: one {} domain, every pair linked directly ({} GB/s per direction per pair). "
                                  "Tensor and expert parallelism up to {} stay on {}{}.",
                                  format_gpu_set(d), fast_name, gbps(min_bw_in(d)), pow2_floor(static_cast<int>(d.size())),
                                  fast_name,
                                  pow2_floor(static_cast<int>(d.size())) != static_cast<int>(d.size())
                                      ? fmt::format(" (largest power of two of {} GPUs)", d.size())
                                      : ""));
      } else {
        std::string names;
        for (const auto& g : groups) {
          if (g.size() == gmax) names += (names.empty() ? "" : ", ") + format_gpu_set(g);
        }
        std::string ring;
        if (d.size() <= 16) {
          std::set<double> levels;
          for (int a : d) {
            for (int b : d) {
              if (a != b && graph.adj[a][b]) levels.insert(rep.bandwidth_GBps[a][b]);
            }
          }
          for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
            if (has_ring(d, rep.bandwidth_GBps, *it)) {
              ring = fmt::format(" A ring through all {} GPUs exists on {} alone (at {} GB/s per direction, its "
                                 "slowest hop), so ring all-reduce over {} GPUs still avoids PCIe, but all-to-all "
                                 "(expert parallelism) and tensor parallelism beyond {} reach pairs without a link.",
                                 d.size(), fast_name, gbps(*it), d.size(), gmax);
              break;
            }
          }
        }
        adv.push_back(fmt::format("GPUs {}: one {} domain but not all-to-all (some pairs have no direct link). The "
                                  "largest fully connected groups have {} GPUs: {}. Keep tensor and expert "
                                  "parallelism to {} inside such a group; put pipeline or data parallelism across the "
                                  "groups.{}",
                                  format_gpu_set(d), fast_name, gmax, names, pow2_floor(static_cast<int>(gmax)),
                                  ring));
        // Which group pairs are only partly linked.
        for (std::size_t a = 0; a < groups.size(); ++a) {
          for (std::size_t b = a + 1; b < groups.size(); ++b) {
            int linked = 0;
            int worst = 0;
            std::string worst_code;
            for (int x : groups[a]) {
              for (int y : groups[b]) {
                const PathCode c = classify_code(topology.links[x][y]);
                if (graph.adj[x][y]) ++linked;
                else if (path_rank(c.type) >= worst) {
                  worst = path_rank(c.type);
                  worst_code = topology.links[x][y];
                }
              }
            }
            const int pairs = static_cast<int>(groups[a].size() * groups[b].size());
            if (linked < pairs && !worst_code.empty()) {
              rep.warnings.push_back(fmt::format("GPUs {} and {}: only {} of {} pairs have a direct {}; the others go "
                                                 "over {}: all-to-all across them (expert parallelism) runs at PCIe "
                                                 "speed", format_gpu_set(groups[a]), format_gpu_set(groups[b]), linked,
                                                 pairs, fast_name, describe_path(worst_code)));
            }
          }
        }
      }
    }
    if (multi.size() > 1 || multi.front().size() < static_cast<std::size_t>(n)) {
      adv.push_back(fmt::format("Tensor and expert parallelism must not span {} domains; use pipeline parallelism "
                                "(or data parallelism) between them.", fast_name));
    }
  }
  // Domains joined only by PCIe.
  if (!multi.empty() && rep.nvlink_domains.size() > 1) {
    int shown = 0;
    for (std::size_t a = 0; a < rep.nvlink_domains.size(); ++a) {
      for (std::size_t b = a + 1; b < rep.nvlink_domains.size(); ++b) {
        int best = path_rank(PathType::unknown) + 1;
        std::string code;
        for (int x : rep.nvlink_domains[a]) {
          for (int y : rep.nvlink_domains[b]) {
            const int r = path_rank(classify_code(topology.links[x][y]).type);
            if (r < best) {
              best = r;
              code = topology.links[x][y];
            }
          }
        }
        if (++shown > 12) continue;
        rep.warnings.push_back(fmt::format("GPUs {} and {} share only {}: tensor parallelism across them runs at PCIe "
                                           "speed", format_gpu_set(rep.nvlink_domains[a]),
                                           format_gpu_set(rep.nvlink_domains[b]), describe_path(code)));
      }
    }
  } else if (multi.empty() && n > 1) {
    // PCIe only: islands of GPUs joined by better than the worst path, and what joins the islands.
    int worst = 0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i != j) worst = std::max(worst, path_rank(classify_code(topology.links[i][j]).type));
      }
    }
    Topology near;
    for (int i = 0; i < n; ++i) {
      near.links.emplace_back();
      for (int j = 0; j < n; ++j) {
        const bool close = i != j && path_rank(classify_code(topology.links[i][j]).type) < worst;
        near.links[i].emplace_back(i == j ? "X" : close ? "NV1" : "SYS");
      }
    }
    const auto islands = nvlink_domains(near);
    int shown = 0;
    for (std::size_t a = 0; a < islands.size() && islands.size() > 1; ++a) {
      for (std::size_t b = a + 1; b < islands.size(); ++b) {
        if (++shown > 12) break;
        const std::string code = topology.links[islands[a][0]][islands[b][0]];
        rep.warnings.push_back(fmt::format("GPUs {} and {} share only {}: tensor parallelism across them runs at PCIe "
                                           "speed", format_gpu_set(islands[a]), format_gpu_set(islands[b]),
                                           describe_path(code)));
      }
    }
    for (const auto& isl : islands) {
      if (isl.size() < 2) continue;
      int r = 0;
      std::string code;
      for (int x : isl) {
        for (int y : isl) {
          if (x != y && path_rank(classify_code(topology.links[x][y]).type) >= r) {
            r = path_rank(classify_code(topology.links[x][y]).type);
            code = topology.links[x][y];
          }
        }
      }
      rep.advice.push_back(fmt::format("GPUs {} are the closest over PCIe (worst pair: {}): a tensor-parallel group of "
                                       "{} would run at PCIe speed but without crossing the CPU socket link.",
                                       format_gpu_set(isl), describe_path(code), isl.size()));
    }
  }
  // A switch-like board where a GPU lacks links: a degraded NVLink or NVSwitch.
  if (max_nv >= 6 && max_nv == min_nv && n >= 4) {
    std::vector<int> odd;
    for (int i = 0; i < n; ++i) {
      int links = 0;
      for (int j = 0; j < n; ++j) links += (i != j && classify_code(topology.links[i][j]).type == PathType::nvlink) ? 1 : 0;
      if (links < n - 1 && links * 2 < n) odd.push_back(i);
    }
    int total = 0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) total += classify_code(topology.links[i][j]).type == PathType::nvlink ? 1 : 0;
    }
    if (!odd.empty() && total > 0 && static_cast<int>(odd.size()) * 2 < n) {
      rep.warnings.push_back(fmt::format("GPU {} show{} no NVLink to most GPUs while the others are all-to-all {}: a "
                                         "degraded NVLink or NVSwitch; check nvidia-smi nvlink -s and the fabric manager",
                                         format_gpu_set(odd), odd.size() == 1 ? "s" : "", fmt::format("NV{}", max_nv)));
    }
  }
  // Network gap and where the outer dimensions go.
  if (n > 0) {
    std::string share;
    double per_gpu = rep.nic_GBps;
    if (rep.compute_nics > 0) {
      per_gpu = rep.nic_GBps * rep.compute_nics / n;
      share = fmt::format("{} NIC{} near the GPUs serve{} {} GPU{} ({} GB/s per GPU)", rep.compute_nics,
                          rep.compute_nics == 1 ? "" : "s", rep.compute_nics == 1 ? "s" : "", n, n == 1 ? "" : "s",
                          gbps(per_gpu));
    } else {
      share = "no NICs in the input: one NIC per GPU assumed";
    }
    if (rep.fastest_gpu_GBps > 0) {
      adv.push_back(fmt::format("Network: the fastest GPU-GPU path ({} GB/s per direction) is {:.1f}x each GPU's share "
                                "of the network ({} GB/s per NIC, {}; {}). Keep tensor and expert parallelism inside "
                                "the node; put pipeline stages and data parallelism across nodes.",
                                gbps(rep.fastest_gpu_GBps), rep.fastest_gpu_GBps / per_gpu, gbps(rep.nic_GBps),
                                rep.nic_reason, share));
    } else {
      adv.push_back(fmt::format("Network: {} GB/s per NIC ({}); {}.", gbps(rep.nic_GBps), rep.nic_reason, share));
    }
  }
  if (!topology.reported_bandwidth_GBps.empty()) {
    double hi = 0;
    for (const auto& row : topology.reported_bandwidth_GBps) {
      for (double v : row) hi = std::max(hi, v);
    }
    if (hi > 0) {
      adv.push_back(fmt::format("amd-smi reports up to {} GB/s between GPUs (NUMA BW table); the bandwidths above are "
                                "nominal link rates.", gbps(hi)));
    }
  }
  std::map<int, std::vector<int>> numa;
  for (const auto& g : topology.gpus) {
    if (g.numa_node) numa[*g.numa_node].push_back(g.index);
  }
  if (numa.size() > 1) {
    std::string s;
    for (const auto& [node, gs] : numa) s += fmt::format("{}GPUs {} on NUMA node {}", s.empty() ? "" : ", ", format_gpu_set(gs), node);
    adv.push_back(fmt::format("Bind each rank's CPU threads and data loader to its GPU's NUMA node: {}.", s));
  }
  return rep;
}

}  // namespace gpuplan
