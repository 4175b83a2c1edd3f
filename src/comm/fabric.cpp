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

bool contains_ci(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

// The per-link rate NCCL's graph assigns to `link` (nccl_model_GBps), else its nominal per-direction rate.
double nccl_rate(const HardwareCatalog& catalog, const std::string& link, double nominal_GBps) {
  if (const LinkSpec* spec = catalog.find_link(link)) {
    if (spec->nccl_model_GBps > 0) return spec->nccl_model_GBps;
    if (spec->per_direction_GBps > 0) return spec->per_direction_GBps;
  }
  return nominal_GBps;
}

// NCCL's PCIe rate for the catalog PCIe link whose nominal rate is closest to `nominal_GBps`.
double nccl_pcie_rate(const HardwareCatalog& catalog, double nominal_GBps) {
  double closest_GBps = 0, closest_distance = 1e300;
  for (const auto& [name, spec] : catalog.links()) {
    if (spec.kind != LinkKind::pcie || spec.nccl_model_GBps <= 0) continue;
    const double distance = std::fabs(spec.per_direction_GBps - nominal_GBps);
    if (distance < closest_distance) {
      closest_distance = distance;
      closest_GBps = spec.nccl_model_GBps;
    }
  }
  return closest_GBps > 0 ? closest_GBps : nominal_GBps;
}

// A PCIe link's rate as NCCL rates it, else its nominal one.
double pcie_link_rate(const LinkSpec& pcie) {
  return pcie.nccl_model_GBps > 0 ? pcie.nccl_model_GBps : pcie.per_direction_GBps;
}

int sm_for(const GpuSpec& gpu) {
  // AMD GPUs (sm_version 0) use the Ampere row: RCCL starts from NCCL's tuning.
  return gpu.sm_version > 0 ? gpu.sm_version : 80;
}

// A catalog system's scale-up domain, each link at `link_GBps`.
void set_scaleup_domain(Fabric& fabric, const ScaleUpDomain& scaleup, double link_GBps) {
  int links_per_gpu = scaleup.links_per_gpu;
  switch (scaleup.topology) {
    case ScaleUpTopology::none:
      fabric.domain_size = 1;
      break;
    case ScaleUpTopology::nvswitch:
      fabric.domain_size = scaleup.domain_gpus;
      fabric.nvswitch = true;
      fabric.domain_per_gpu_GBps = links_per_gpu * link_GBps;
      break;
    case ScaleUpTopology::full_mesh:
    case ScaleUpTopology::pairs:
      fabric.domain_size = scaleup.domain_gpus;
      fabric.domain_per_gpu_GBps = links_per_gpu * link_GBps;
      break;
    case ScaleUpTopology::hybrid_cube_mesh: {
      fabric.domain_size = scaleup.domain_gpus;
      // Rings use every link: the smallest per-GPU link total of the matrix.
      int fewest_links = 0;
      for (const auto& row : scaleup.link_matrix) {
        int row_links = 0;
        for (int links : row) row_links += links;
        fewest_links = fewest_links == 0 ? row_links : std::min(fewest_links, row_links);
      }
      if (links_per_gpu == 0) links_per_gpu = fewest_links;
      fabric.domain_per_gpu_GBps = links_per_gpu * link_GBps;
      for (const auto& row : scaleup.link_matrix) {
        std::vector<double> row_GBps;
        for (int links : row) row_GBps.push_back(links * link_GBps);
        fabric.pair_GBps.push_back(row_GBps);
      }
      break;
    }
  }
  if (fabric.domain_per_gpu_GBps <= 0) fabric.domain_size = 1;
}

// The topology's GPU: `given`, else recognised from the names the tool printed; null when neither.
const GpuSpec* recognised_gpu(const Topology& topology, const GpuSpec* given, const HardwareCatalog& catalog) {
  if (given != nullptr) return given;
  for (const auto& listed : topology.gpus)
    if (!listed.name.empty())
      if (const GpuSpec* found = catalog.gpu_by_device_name(listed.name)) return found;
  return nullptr;
}

// The analysis takes the GPU's link rates when they are known under its catalog name or its device name.
TopologyOptions topology_options(const GpuSpec* gpu) {
  TopologyOptions options;
  if (gpu != nullptr) {
    if (link_rates_for_gpu(gpu->name)) options.gpu_name = gpu->name;
    else if (!gpu->device_names.empty() && link_rates_for_gpu(gpu->device_names.front()))
      options.gpu_name = gpu->device_names.front();
  }
  return options;
}

// NCCL's per-link NVLink rate relative to the nominal one the report uses.
double nccl_nvlink_ratio(const HardwareCatalog& catalog, const GpuSpec* gpu, const TopologyReport& report) {
  std::string link;
  if (gpu != nullptr && !gpu->scaleup_link.empty()) link = gpu->scaleup_link;
  else if (report.rates && !report.rates->nvlink_link.empty()) link = report.rates->nvlink_link;
  if (link.empty()) return 1.0;
  if (const LinkSpec* spec = catalog.find_link(link))
    if (spec->nccl_model_GBps > 0 && spec->per_direction_GBps > 0)
      return spec->nccl_model_GBps / spec->per_direction_GBps;
  return 1.0;
}

// The largest NVLink/xGMI domain; a switch when every pair shows the same bundle and that bundle times the
// peers exceeds what a GPU can have (NVSwitch boards print the GPU's whole link count for every pair).
void set_topology_domain(Fabric& fabric, const Topology& topology, const TopologyReport& report, const GpuSpec* gpu,
                         double nvlink_ratio) {
  const std::vector<int>* largest = nullptr;
  for (const auto& domain : report.nvlink_domains)
    if (largest == nullptr || domain.size() > largest->size()) largest = &domain;
  if (largest == nullptr || largest->size() < 2) return;
  const int max_links = gpu != nullptr && gpu->scaleup_links > 0 ? gpu->scaleup_links : 18;
  bool uniform = true;
  int bundle = -1;
  double slowest_pair_GBps = 0, smallest_total_GBps = 0;  // a GPU's total: to all its peers in the domain
  for (int a : *largest) {
    double total_GBps = 0;
    for (int b : *largest) {
      if (a == b) continue;
      const PathCode path = classify_code(topology.links[a][b]);
      if (bundle < 0) bundle = path.links;
      if (path.links != bundle || path.type != PathType::nvlink) uniform = false;
      const double pair_GBps = report.bandwidth_GBps[a][b];
      total_GBps += pair_GBps;
      slowest_pair_GBps = slowest_pair_GBps == 0 ? pair_GBps : std::min(slowest_pair_GBps, pair_GBps);
    }
    smallest_total_GBps = smallest_total_GBps == 0 ? total_GBps : std::min(smallest_total_GBps, total_GBps);
  }
  const int size = static_cast<int>(largest->size());
  const bool nvswitch = uniform && size >= 3 && bundle * (size - 1) > max_links;
  fabric.domain_size = size;
  fabric.nvswitch = nvswitch;
  fabric.domain_per_gpu_GBps = (nvswitch ? slowest_pair_GBps : smallest_total_GBps) * nvlink_ratio;
}

}  // namespace

Fabric fabric_from_cluster(const Cluster& cluster, const HardwareCatalog* catalog_in) {
  const HardwareCatalog& catalog = catalog_in ? *catalog_in : HardwareCatalog::builtin();
  const SystemSpec& system_spec = cluster.system;
  Fabric fabric;
  fabric.name = cluster.name;
  fabric.gpu = cluster.gpu.name;
  fabric.gpus_per_node = std::max(system_spec.gpus_per_node, 1);
  fabric.nodes = std::max(cluster.nodes, 1);
  fabric.sm_version = sm_for(cluster.gpu);
  fabric.amd_gpus = cluster.gpu.vendor == "amd";
  fabric.amd_host = contains_ci(system_spec.cpu, "amd") || contains_ci(system_spec.cpu, "epyc");
  // A GPU drives no more scale-up links than it has: an H800 (8 NVLinks) on an H100 system's switches (18 per
  // GPU) gets 8 of them. The hybrid cube mesh's links come from its matrix and stay.
  ScaleUpDomain scaleup = system_spec.scaleup;
  if (cluster.gpu.scaleup_links > 0 && scaleup.topology != ScaleUpTopology::hybrid_cube_mesh)
    scaleup.links_per_gpu = std::min(scaleup.links_per_gpu, cluster.gpu.scaleup_links);
  set_scaleup_domain(fabric, scaleup, nccl_rate(catalog, scaleup.link, scaleup.link_per_direction_GBps));
  // Host link per GPU (NCCL's PCIe rate), shared by gpus_per_host_link GPUs.
  double host_link_GBps = 0;
  if (const LinkSpec* host_link = catalog.find_link(system_spec.host_link)) {
    if (host_link->kind == LinkKind::pcie) host_link_GBps = pcie_link_rate(*host_link);
  }
  if (host_link_GBps <= 0 && system_spec.host_per_direction_GBps > 0)
    host_link_GBps = nccl_pcie_rate(catalog, system_spec.host_per_direction_GBps);
  fabric.pcie_per_gpu_GBps = host_link_GBps / std::max(system_spec.gpus_per_host_link, 1);
  fabric.nics_per_node = system_spec.nics_per_node;
  fabric.nic_per_gpu_GBps = system_spec.nic_per_gpu_per_direction_GBps() / std::max(cluster.oversubscription, 1.0);
  return fabric;
}

std::string_view scaleup_name(const Fabric& fabric) { return fabric.amd_gpus ? "xGMI" : "NVLink"; }
std::string_view collective_library(const Fabric& fabric) { return fabric.amd_gpus ? "RCCL" : "NCCL"; }

Fabric fabric_from_topology(const Topology& topology, const GpuSpec* gpu, double nic_per_gpu_GBps) {
  if (!(nic_per_gpu_GBps >= 0) || !std::isfinite(nic_per_gpu_GBps))
    throw InputError("cluster.nic_GBps", fmt::format("{}", nic_per_gpu_GBps), "a bandwidth in GB/s >= 0");
  const HardwareCatalog& catalog = HardwareCatalog::builtin();
  const int gpus = static_cast<int>(topology.gpus.size());
  if (gpus < 1) throw InputError("cluster.topology", "a topology without GPUs", "a topology listing at least one GPU");
  const GpuSpec* known_gpu = recognised_gpu(topology, gpu, catalog);
  const TopologyReport report = analyze_topology(topology, topology_options(known_gpu));

  Fabric fabric;
  fabric.name = fmt::format("{}-GPU node ({})", gpus, topology.format);
  fabric.gpus_per_node = gpus;
  fabric.nodes = 1;
  fabric.sm_version = known_gpu != nullptr ? sm_for(*known_gpu) : 80;
  if (known_gpu != nullptr) fabric.gpu = known_gpu->name;
  fabric.pair_GBps = report.bandwidth_GBps;
  fabric.amd_gpus = known_gpu != nullptr ? known_gpu->vendor == "amd" : report.has_xgmi;
  set_topology_domain(fabric, topology, report, known_gpu, nccl_nvlink_ratio(catalog, known_gpu, report));
  // PCIe: the GPU's host link as NCCL rates it.
  if (known_gpu != nullptr && !known_gpu->host_link.empty()) {
    if (const LinkSpec* host_link = catalog.find_link(known_gpu->host_link))
      if (host_link->kind == LinkKind::pcie) fabric.pcie_per_gpu_GBps = pcie_link_rate(*host_link);
  }
  if (fabric.pcie_per_gpu_GBps <= 0 && report.rates && report.rates->pcie_GBps > 0)
    fabric.pcie_per_gpu_GBps = nccl_pcie_rate(catalog, report.rates->pcie_GBps);
  fabric.nics_per_node = report.compute_nics;
  if (nic_per_gpu_GBps > 0) fabric.nic_per_gpu_GBps = nic_per_gpu_GBps;
  else if (report.compute_nics > 0) fabric.nic_per_gpu_GBps = report.nic_GBps * report.compute_nics / gpus;
  return fabric;
}

}  // namespace gpuplan
