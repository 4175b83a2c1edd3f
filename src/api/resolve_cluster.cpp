// The machines of a request, one rule for every question: a catalog system and a node count (enough nodes for the
// job when not given), a cluster JSON file, or one node's topology output.
#include <fmt/format.h>

#include <algorithm>

#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::api::detail {

namespace {

bool is_json_object(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

ResolvedCluster from_cluster(const Cluster& c, const HardwareCatalog& catalog, std::string origin) {
  ResolvedCluster out;
  out.gpu = c.gpu;
  out.system = c.system;
  out.fabric = fabric_from_cluster(c, &catalog);
  out.origin = std::move(origin);
  out.name = c.name;
  return out;
}

}  // namespace

Topology parse_topology_output(const std::string& text, const std::string& path) {
  try {
    return parse_topology(text);
  } catch (const InputError& e) {
    if (!e.field().empty()) throw;
    throw InputError(path, e.what(), "the text of nvidia-smi topo -m, rocm-smi --showtopo or amd-smi topology");
  }
}

namespace {

ResolvedCluster from_topology_output(const ClusterOptions& o, const Topology& topology, const HardwareCatalog& catalog,
                                     const std::optional<std::string>& gpu) {
  ResolvedCluster out;
  const GpuSpec* spec = nullptr;
  if (gpu) {
    out.gpu = catalog.gpu(*gpu);
    spec = &out.gpu;
  }
  const double nic = o.nic_GBps.value_or(0);
  out.fabric = fabric_from_topology(topology, spec, nic);
  out.fabric.nodes = static_cast<int>(o.nodes.value_or(1));
  if (out.fabric.nodes > 1 && !(out.fabric.nic_per_gpu_GBps > 0))
    throw InputError("cluster.nodes", std::to_string(out.fabric.nodes),
                     "1, or give the NIC bandwidth per GPU with cluster.nic_GBps (the topology shows no NICs)");
  out.origin = o.topology->path;
  out.name = fmt::format("{}x {}", out.fabric.nodes, out.fabric.name);
  return out;
}

// What a topology's links suggest the GPU is, as `gpuplan topo` infers it: "--gpu h100-sxm-80gb (inferred from
// NV18 ...)"; "" when they suggest nothing.
std::string links_suggest(const Topology& topology, const HardwareCatalog& catalog) {
  TopologyOptions options;
  options.catalog = &catalog;
  const TopologyReport report = analyze_topology(topology, options);
  if (!report.rates) return {};
  std::string why = report.rates_reason;   // "inferred from NV18 (...); taken as h100-sxm-80gb"
  if (const auto taken = why.rfind("; taken as "); taken != std::string::npos) why.resize(taken);
  return fmt::format("--gpu {} ({})", report.rates->gpu, why);
}

}  // namespace

void require_known_gpu(const ResolvedCluster& cluster) {
  if (cluster.gpu_known) return;
  const std::string accepted = "a GPU catalog name with a topology output, which does not name its GPUs";
  if (cluster.gpu_guess.empty()) throw InputError("gpu", "(none)", accepted);
  throw InputError("gpu", "(none)", accepted + "; its links suggest " + cluster.gpu_guess);
}

ResolvedCluster resolve_cluster(const ClusterOptions& o, const HardwareCatalog& catalog,
                                const std::optional<std::string>& gpu, std::int64_t ranks,
                                std::int64_t ranks_per_node) {
  if (o.system && o.topology)
    throw InputError("cluster.topology", o.topology->path, "either cluster.system or cluster.topology");
  if (o.nic_GBps && !o.topology)
    throw InputError("cluster.nic_GBps", fmt::format("{}", *o.nic_GBps),
                     "only with cluster.topology (a system's NICs come from the catalog)");
  if (o.topology) {
    const std::string& text = file_text(*o.topology, "cluster.topology");
    if (!is_json_object(text)) {
      const Topology topology = parse_topology_output(text, o.topology->path);
      ResolvedCluster out = from_topology_output(o, topology, catalog, gpu);
      out.gpu_known = gpu.has_value();  // without one the links' generation is inferred, the compute is not
      if (!gpu) out.gpu_guess = links_suggest(topology, catalog);
      return out;
    }
    Cluster c = cluster_from_json(catalog, text, o.topology->path);
    if (o.nodes) c.nodes = static_cast<int>(*o.nodes);
    if (gpu) c.gpu = catalog.gpu(*gpu);
    return from_cluster(c, catalog, o.topology->path);
  }
  if (!o.system)
    throw InputError("cluster.system", "(none)",
                     "a system name (see 'gpuplan catalog systems') or cluster.topology FILE");
  const SystemSpec& system = catalog.system(*o.system);
  const std::int64_t per_node = std::max(1, system.gpus_per_node);
  const std::int64_t placed = ranks_per_node > 0 ? std::min(ranks_per_node, per_node) : per_node;
  const std::int64_t nodes = o.nodes ? *o.nodes : std::max<std::int64_t>(1, (ranks + placed - 1) / placed);
  if (nodes > 1'000'000) throw InputError("cluster.nodes", std::to_string(nodes), "at most 1000000 nodes");
  Cluster c = make_cluster(catalog, *o.system, static_cast<int>(nodes));
  if (gpu) c.gpu = catalog.gpu(*gpu);
  return from_cluster(c, catalog, fmt::format("--system {} --nodes {}", *o.system, nodes));
}

}  // namespace gpuplan::api::detail
