// Clusters: a system times a node count, with the shape of the network between the nodes.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/names.hpp"
#include "hardware/json_fields.hpp"
#include "util/json_input.hpp"

namespace gpuplan {

using nlohmann::json;

std::string_view to_string(NetworkShape shape) {
  switch (shape) {
    case NetworkShape::single_node: return "single-node";
    case NetworkShape::rail_optimized: return "rail-optimized";
    case NetworkShape::fat_tree: return "fat-tree";
  }
  return "?";
}

double Cluster::scaleout_per_gpu_per_direction_GBps() const {
  if (nodes <= 1) return 0;
  return system.nic_per_gpu_per_direction_GBps() / oversubscription;
}

namespace {
constexpr int kMaxNodes = 1000000;

Cluster assemble(const HardwareCatalog& catalog, std::string_view system, int nodes, std::string origin,
                 const std::string& nodes_field, const std::string& system_field) {
  if (nodes < 1 || nodes > kMaxNodes)
    throw InputError(nodes_field, std::to_string(nodes), fmt::format("a whole number from 1 to {}", kMaxNodes));
  Cluster c;
  if (catalog.find_system(system) == nullptr) {
    const std::string hint = did_you_mean(system, catalog.system_names());
    throw InputError(system_field, "'" + std::string(system) + "' (unknown" + (hint.empty() ? "" : "; " + hint) + ")",
                     "a name from 'gpuplan catalog systems' or one added with --catalog");
  }
  c.system = *catalog.find_system(system);
  c.gpu = catalog.gpu(c.system.gpu);
  c.nodes = nodes;
  c.network = nodes == 1 ? NetworkShape::single_node : NetworkShape::rail_optimized;
  c.name = fmt::format("{}x {}", nodes, c.system.name);
  c.origin = std::move(origin);
  return c;
}
}  // namespace

Cluster make_cluster(const HardwareCatalog& catalog, std::string_view system, int nodes) {
  Cluster c = assemble(catalog, system, nodes, fmt::format("--system {} --nodes {}", system, nodes), "cluster.nodes",
                       "cluster.system");
  if (nodes > 1 && c.system.nics_per_node == 0)
    throw InputError("cluster.nodes", std::to_string(nodes),
                     fmt::format("1: system {} has no compute NICs (define nics_per_node with --catalog)",
                                 c.system.name));
  return c;
}

Cluster make_cluster(std::string_view system, int nodes) {
  return make_cluster(HardwareCatalog::builtin(), system, nodes);
}

Cluster cluster_from_json(const HardwareCatalog& base, std::string_view json_text, std::string_view origin_view) {
  const std::string origin(origin_view);
  const json doc = detail::parse_json_input(json_text, origin, "a JSON cluster object");
  if (!doc.is_object()) throw InputError(origin, std::string(doc.type_name()), "a JSON cluster object");
  // Catalog additions carried by the cluster file itself.
  HardwareCatalog catalog = base;
  json additions = json::object();
  for (const char* section : {"gpus", "links", "systems"})
    if (doc.contains(section)) additions[section] = doc[section];
  if (!additions.empty()) catalog.merge_json(additions.dump(), origin);

  hwjson::Entry e(doc, origin, "cluster", {"name", "system", "nodes", "network", "gpus", "links", "systems"});
  const std::string system = e.string("system");
  const int nodes = e.integer("nodes", std::nullopt, 1, kMaxNodes);
  Cluster c = assemble(catalog, system, nodes, origin, e.field("nodes"), e.field("system"));
  c.name = e.string("name", c.name);
  if (e.has("network")) {
    hwjson::Entry n = e.object("network", {"shape", "oversubscription"});
    static const std::vector<std::pair<std::string, NetworkShape>> shapes = {
        {"single-node", NetworkShape::single_node},
        {"rail-optimized", NetworkShape::rail_optimized},
        {"fat-tree", NetworkShape::fat_tree}};
    if (n.has("shape")) c.network = n.choice("shape", shapes);
    c.oversubscription = n.number("oversubscription", 1.0, 1.0, 1000.0);
    if (c.network == NetworkShape::single_node && nodes > 1)
      throw InputError(n.field("shape"), "'single-node'", fmt::format("rail-optimized or fat-tree for {} nodes", nodes));
    if (c.network == NetworkShape::rail_optimized && c.oversubscription != 1.0)
      throw InputError(n.field("oversubscription"), fmt::format("{}", c.oversubscription),
                       "1 for rail-optimized (oversubscription describes a fat tree's leaves)");
  }
  if (nodes > 1 && c.system.nics_per_node == 0)
    throw InputError(e.field("nodes"), std::to_string(nodes),
                     fmt::format("1: system {} has no compute NICs", c.system.name));
  return c;
}

Cluster cluster_from_json(std::string_view json_text, std::string_view origin) {
  return cluster_from_json(HardwareCatalog::builtin(), json_text, origin);
}

}  // namespace gpuplan
