#include "cluster_options.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::cli {

void ClusterOptions::add_to(CLI::App& cmd) {
  const char* group = "Cluster";
  cmd.add_option("--system", system, "System of each node (see 'gpuplan catalog systems'), e.g. dgx-h100")
      ->type_name("NAME")->group(group);
  cmd.add_option("--nodes", nodes, "Nodes of that system (default: as many as the layout needs)")->group(group);
  cmd.add_option("--topology", topology,
                 "Cluster JSON file ({\"system\": ..., \"nodes\": ..., \"network\": ...}), or one node's "
                 "'nvidia-smi topo -m' / 'rocm-smi --showtopo' / 'amd-smi topology' output")
      ->type_name("FILE")->group(group);
  cmd.add_option("--nic-GBps", nic_GBps, "With a topology output: scale-out bandwidth per GPU, one direction")
      ->group(group);
}

ResolvedCluster ClusterOptions::resolve(const HardwareCatalog& catalog, const std::string& gpu_name,
                                        std::int64_t gpus_needed) const {
  if (!system.empty() && !topology.empty()) throw InputError("--topology", topology, "either --system or --topology");
  if (nodes != -1 && nodes < 1) throw InputError("--nodes", std::to_string(nodes), "a positive integer");
  ResolvedCluster out;
  if (!topology.empty()) {
    const std::string text = read_text_file(topology, "--topology");
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
      Cluster c = cluster_from_json(catalog, text, topology);
      if (nodes != -1) c.nodes = nodes;
      out.gpu = gpu_name.empty() ? c.gpu : catalog.gpu(gpu_name);
      out.fabric = fabric_from_cluster(c);
      out.origin = topology;
      return out;
    }
    if (gpu_name.empty()) throw InputError("--gpu", "(none)", "a GPU catalog name with a topology output");
    out.gpu = catalog.gpu(gpu_name);
    if (nic_GBps < 0) throw InputError("--nic-GBps", fmt::format("{}", nic_GBps), "a non-negative bandwidth");
    out.fabric = fabric_from_topology(parse_topology(text), &out.gpu, nic_GBps);
    out.fabric.nodes = nodes == -1 ? 1 : nodes;
    out.origin = topology;
    return out;
  }
  if (system.empty())
    throw InputError("--system", "(none)", "a system name (see 'gpuplan catalog systems') or --topology FILE");
  const SystemSpec& sys = catalog.system(system);
  const int per_node = std::max(1, sys.gpus_per_node);
  const int n = nodes != -1 ? nodes
                            : static_cast<int>(std::max<std::int64_t>(1, (gpus_needed + per_node - 1) / per_node));
  const Cluster c = make_cluster(catalog, system, n);
  out.gpu = gpu_name.empty() ? c.gpu : catalog.gpu(gpu_name);
  out.fabric = fabric_from_cluster(c);
  out.origin = fmt::format("--system {} --nodes {}", system, n);
  return out;
}

}  // namespace gpuplan::cli
