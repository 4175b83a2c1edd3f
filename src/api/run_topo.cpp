// gpuplan topo: the link matrix, NVLink domains, GPU-NIC pairing and placement advice of one node.
#include "api/fields.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::api {

namespace {

Nullable<std::string> nonempty(const std::string& s) { return s.empty() ? Nullable<std::string>() : s; }

std::vector<std::vector<std::int64_t>> groups(const std::vector<std::vector<int>>& in) {
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& g : in) out.emplace_back(g.begin(), g.end());
  return out;
}

TopoGpuReport gpu_report(const TopologyReport& r, const TopoGpu& g) {
  TopoGpuReport out;
  out.index = g.index;
  out.name = nonempty(g.name);
  if (g.numa_node) out.numa_node = *g.numa_node;
  out.numa_affinity.assign(g.numa_affinity.begin(), g.numa_affinity.end());
  out.cpu_affinity = nonempty(g.cpu_affinity);
  if (g.gpu_numa_id) out.gpu_numa_id = *g.gpu_numa_id;
  if (!g.pci_bus_id.empty()) out.pci_bus_id = g.pci_bus_id;
  const int nic = r.nearest_nic[static_cast<std::size_t>(g.index)];
  if (nic >= 0) out.nearest_nic = r.topology.nics[static_cast<std::size_t>(nic)].name;
  return out;
}

TopoResult topo_result(const TopologyReport& r) {
  const Topology& t = r.topology;
  TopoResult out;
  out.format = t.format;
  for (const auto& g : t.gpus) out.gpus.push_back(gpu_report(r, g));
  for (std::size_t c = 0; c < t.nics.size(); ++c) {
    const auto& nearest = r.nic_nearest_gpus[c];
    out.nics.push_back(TopoNicReport{t.nics[c].label, t.nics[c].name, t.nics[c].gpu_codes,
                                     std::vector<std::int64_t>(nearest.begin(), nearest.end())});
  }
  out.links = t.links;
  out.bandwidth_GBps = r.bandwidth_GBps;
  out.nvlink_domains = groups(r.nvlink_domains);
  out.scaleup_link = r.has_xgmi ? "xGMI" : "NVLink";
  out.all_to_all_groups = groups(r.all_to_all_groups);
  out.max_tp_in_domain = r.max_tp_in_domain;
  if (r.rates) {
    out.gpu = r.rates->gpu;
    out.generation = r.rates->generation;
    out.nvlink_per_link_GBps = r.rates->nvlink_per_link_GBps;
    out.rates_source = r.rates->source;
  }
  out.generation_reason = r.rates_reason;
  out.fastest_gpu_GBps = r.fastest_gpu_GBps;
  out.nic_GBps = r.nic_GBps;
  out.nic_GBps_reason = r.nic_reason;
  out.compute_nics = r.compute_nics;
  out.warnings = r.warnings;
  out.advice = r.advice;
  return out;
}

}  // namespace

TopoResult run(const TopoRequest& request, const Topology& topology) {
  detail::check_bounds(request);
  const auto catalog_owner = detail::resolve_catalog(request.catalog, "catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  TopologyOptions options;
  options.catalog = &catalog;
  options.gpu_name = request.gpu.value_or("");
  options.nic_GBps = request.nic_GBps;
  if (request.nvlink) options.nvlink_status = parse_nvlink_status(detail::file_text(*request.nvlink, "nvlink"));
  return topo_result(analyze_topology(topology, options));
}

TopoResult run(const TopoRequest& request) {
  if (!request.topology)
    throw InputError("topology", "(none)",
                     "a topology output (the host layer asks the NVIDIA driver when none is given)");
  return run(request, detail::parse_topology_output(detail::file_text(*request.topology, "topology"),
                                                   request.topology->path));
}

}  // namespace gpuplan::api
