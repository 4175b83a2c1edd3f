// Fabric: what the comm model needs, from a catalog cluster or from a parsed intra-node topology.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan {

namespace {

bool contains_ci(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

// The per-link rate NCCL's graph assigns to `link` (nccl_model_GBps), else its nominal per-direction rate.
double nccl_rate(const HardwareCatalog& catalog, const std::string& link, double nominal) {
  if (const LinkSpec* l = catalog.find_link(link)) {
    if (l->nccl_model_GBps > 0) return l->nccl_model_GBps;
    if (l->per_direction_GBps > 0) return l->per_direction_GBps;
  }
  return nominal;
}

// NCCL's PCIe rate for the catalog PCIe link whose nominal rate is closest to `nominal`.
double nccl_pcie_rate(const HardwareCatalog& catalog, double nominal) {
  double best = 0, dist = 1e300;
  for (const auto& [name, l] : catalog.links()) {
    if (l.kind != LinkKind::pcie || l.nccl_model_GBps <= 0) continue;
    const double d = std::fabs(l.per_direction_GBps - nominal);
    if (d < dist) {
      dist = d;
      best = l.nccl_model_GBps;
    }
  }
  return best > 0 ? best : nominal;
}

int sm_for(const GpuSpec& gpu) {
  // AMD GPUs (sm_version 0) use the Ampere row: RCCL starts from NCCL's tuning.
  return gpu.sm_version > 0 ? gpu.sm_version : 80;
}

}  // namespace

Fabric fabric_from_cluster(const Cluster& cluster, const HardwareCatalog* catalog_in) {
  const HardwareCatalog& catalog = catalog_in ? *catalog_in : HardwareCatalog::builtin();
  const SystemSpec& sys = cluster.system;
  Fabric f;
  f.name = cluster.name;
  f.gpus_per_node = std::max(sys.gpus_per_node, 1);
  f.nodes = std::max(cluster.nodes, 1);
  f.sm_version = sm_for(cluster.gpu);
  f.amd_host = contains_ci(sys.cpu, "amd") || contains_ci(sys.cpu, "epyc");
  const ScaleUpDomain& u = sys.scaleup;
  const double link = nccl_rate(catalog, u.link, u.link_per_direction_GBps);
  int links = u.links_per_gpu;
  switch (u.topology) {
    case ScaleUpTopology::none:
      f.domain_size = 1;
      break;
    case ScaleUpTopology::nvswitch:
      f.domain_size = u.domain_gpus;
      f.nvswitch = true;
      f.domain_per_gpu_GBps = links * link;
      break;
    case ScaleUpTopology::full_mesh:
    case ScaleUpTopology::pairs:
      f.domain_size = u.domain_gpus;
      f.domain_per_gpu_GBps = links * link;
      break;
    case ScaleUpTopology::hybrid_cube_mesh: {
      f.domain_size = u.domain_gpus;
      // Rings use every link: the smallest per-GPU link total of the matrix.
      int fewest = 0;
      for (const auto& row : u.link_matrix) {
        int sum = 0;
        for (int x : row) sum += x;
        fewest = fewest == 0 ? sum : std::min(fewest, sum);
      }
      if (links == 0) links = fewest;
      f.domain_per_gpu_GBps = links * link;
      for (const auto& row : u.link_matrix) {
        std::vector<double> r;
        for (int x : row) r.push_back(x * link);
        f.pair_GBps.push_back(r);
      }
      break;
    }
  }
  if (f.domain_per_gpu_GBps <= 0) f.domain_size = 1;
  // Host link per GPU (NCCL's PCIe rate), shared by gpus_per_host_link GPUs.
  double pcie = 0;
  if (const LinkSpec* l = catalog.find_link(sys.host_link)) {
    if (l->kind == LinkKind::pcie) pcie = l->nccl_model_GBps > 0 ? l->nccl_model_GBps : l->per_direction_GBps;
  }
  if (pcie <= 0 && sys.host_per_direction_GBps > 0) pcie = nccl_pcie_rate(catalog, sys.host_per_direction_GBps);
  f.pcie_per_gpu_GBps = pcie / std::max(sys.gpus_per_host_link, 1);
  f.nics_per_node = sys.nics_per_node;
  f.nic_per_gpu_GBps = sys.nic_per_gpu_per_direction_GBps() / std::max(cluster.oversubscription, 1.0);
  return f;
}

Fabric fabric_from_topology(const Topology& topology, const GpuSpec* gpu, double nic_per_gpu_GBps) {
  if (!(nic_per_gpu_GBps >= 0) || !std::isfinite(nic_per_gpu_GBps))
    throw InputError("--nic-GBps", fmt::format("{}", nic_per_gpu_GBps), "a bandwidth in GB/s >= 0");
  const HardwareCatalog& catalog = HardwareCatalog::builtin();
  const int n = static_cast<int>(topology.gpus.size());
  if (n < 1) throw InputError("--topology", "a topology without GPUs", "a topology listing at least one GPU");
  // The GPU: given, or recognised from the names the tool printed.
  const GpuSpec* g = gpu;
  if (g == nullptr)
    for (const auto& tg : topology.gpus)
      if (!tg.name.empty() && (g = catalog.gpu_by_device_name(tg.name)) != nullptr) break;
  TopologyOptions opts;
  if (g != nullptr) {
    if (link_rates_for_gpu(g->name)) opts.gpu_name = g->name;
    else if (!g->device_names.empty() && link_rates_for_gpu(g->device_names.front()))
      opts.gpu_name = g->device_names.front();
  }
  const TopologyReport rep = analyze_topology(topology, opts);

  Fabric f;
  f.name = fmt::format("{}-GPU node ({})", n, topology.format);
  f.gpus_per_node = n;
  f.nodes = 1;
  f.sm_version = g != nullptr ? sm_for(*g) : 80;
  f.pair_GBps = rep.bandwidth_GBps;

  // NCCL's per-link NVLink rate relative to the nominal one the report uses.
  double ratio = 1.0;
  if (g != nullptr && !g->scaleup_link.empty()) {
    if (const LinkSpec* l = catalog.find_link(g->scaleup_link))
      if (l->nccl_model_GBps > 0 && l->per_direction_GBps > 0) ratio = l->nccl_model_GBps / l->per_direction_GBps;
  } else if (rep.rates && !rep.rates->nvlink_link.empty()) {
    if (const LinkSpec* l = catalog.find_link(rep.rates->nvlink_link))
      if (l->nccl_model_GBps > 0 && l->per_direction_GBps > 0) ratio = l->nccl_model_GBps / l->per_direction_GBps;
  }
  // The largest NVLink/xGMI domain; a switch when every pair shows the same bundle and that bundle times the
  // peers exceeds what a GPU can have (NVSwitch boards print the GPU's whole link count for every pair).
  const std::vector<int>* dom = nullptr;
  for (const auto& d : rep.nvlink_domains)
    if (dom == nullptr || d.size() > dom->size()) dom = &d;
  if (dom != nullptr && dom->size() >= 2) {
    const int max_links = g != nullptr && g->scaleup_links > 0 ? g->scaleup_links : 18;
    bool uniform = true;
    int bundle = -1;
    double min_pair = 0, min_sum = 0;
    for (int a : *dom) {
      double sum = 0;
      for (int b : *dom) {
        if (a == b) continue;
        const PathCode pc = classify_code(topology.links[a][b]);
        if (bundle < 0) bundle = pc.links;
        if (pc.links != bundle || pc.type != PathType::nvlink) uniform = false;
        const double bw = rep.bandwidth_GBps[a][b];
        sum += bw;
        min_pair = min_pair == 0 ? bw : std::min(min_pair, bw);
      }
      min_sum = min_sum == 0 ? sum : std::min(min_sum, sum);
    }
    const int size = static_cast<int>(dom->size());
    const bool nvswitch = uniform && size >= 3 && bundle * (size - 1) > max_links;
    f.domain_size = size;
    f.nvswitch = nvswitch;
    f.domain_per_gpu_GBps = (nvswitch ? min_pair : min_sum) * ratio;
  }
  // PCIe: the GPU's host link as NCCL rates it.
  if (g != nullptr && !g->host_link.empty()) {
    if (const LinkSpec* l = catalog.find_link(g->host_link))
      if (l->kind == LinkKind::pcie) f.pcie_per_gpu_GBps = l->nccl_model_GBps > 0 ? l->nccl_model_GBps : l->per_direction_GBps;
  }
  if (f.pcie_per_gpu_GBps <= 0 && rep.rates && rep.rates->pcie_GBps > 0)
    f.pcie_per_gpu_GBps = nccl_pcie_rate(catalog, rep.rates->pcie_GBps);
  f.nics_per_node = rep.compute_nics;
  if (nic_per_gpu_GBps > 0) f.nic_per_gpu_GBps = nic_per_gpu_GBps;
  else if (rep.compute_nics > 0) f.nic_per_gpu_GBps = rep.nic_GBps * rep.compute_nics / n;
  return f;
}

}  // namespace gpuplan
