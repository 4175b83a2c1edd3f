// The catalog's JSON: every field of a GPU, link or system with its sources (derived rates included), and the
// model summaries.
#include "api/result_members.hpp"
#include "gpuplan/api.hpp"

namespace gpuplan::api {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

void write_sources(ordered_json& j, const std::string& source, const std::map<std::string, std::string>& fields,
                   const std::string& origin) {
  j["source"] = source;
  if (!fields.empty()) j["sources"] = fields;
  j["origin"] = origin;
}

ordered_json gpu_json(const GpuSpec& g) {
  ordered_json j;
  j["name"] = g.name;
  j["vendor"] = g.vendor;
  j["description"] = g.description;
  j["device_names"] = g.device_names;
  j["architecture"] = g.architecture;
  j["compute_arch"] = g.compute_arch;
  j["sm_version"] = g.sm_version;
  j["form_factor"] = g.form_factor;
  j["memory_type"] = g.memory_type;
  j["marketed_memory_GB"] = g.marketed_memory_GB;
  j["usable_memory_bytes"] = g.usable_memory_bytes;
  j["memory_GBps"] = g.memory_GBps;
  j["dense_tflops"] = ordered_json::object();
  for (const auto& [dtype, tflops] : g.dense_tflops) j["dense_tflops"][dtype] = tflops;
  j["scaleup_link"] = g.scaleup_link;
  j["scaleup_links"] = g.scaleup_links;
  j["scaleup_per_direction_GBps"] = g.scaleup_per_direction_GBps;
  j["scaleup_bidirectional_GBps"] = g.scaleup_bidirectional_GBps;
  j["host_link"] = g.host_link;
  j["host_per_direction_GBps"] = g.host_per_direction_GBps;
  j["board_power_W"] = g.board_power_W;
  if (g.best_published_mfu_causal > 0) j["best_published_mfu_causal"] = g.best_published_mfu_causal;
  write_sources(j, g.source, g.field_sources, g.origin);
  return j;
}

ordered_json link_json(const LinkSpec& l) {
  ordered_json j;
  j["name"] = l.name;
  j["kind"] = std::string(to_string(l.kind));
  j["description"] = l.description;
  j["generation"] = l.generation;
  j["per_direction_GBps"] = l.per_direction_GBps;
  j["bidirectional_GBps"] = l.bidirectional_GBps;
  j["latency_us"] = l.latency_us;
  if (l.typical_links_per_gpu > 0) {
    j["typical_links_per_gpu"] = l.typical_links_per_gpu;
    j["typical_per_gpu_per_direction_GBps"] = l.typical_per_gpu_per_direction_GBps();
    j["typical_per_gpu_bidirectional_GBps"] = l.typical_per_gpu_bidirectional_GBps();
  }
  if (l.ports > 0) {
    j["ports"] = l.ports;
    j["port_link"] = l.port_link;
  }
  if (l.reported_rate_GBps > 0) j["reported_rate_GBps"] = l.reported_rate_GBps;
  if (l.nccl_model_GBps > 0) j["nccl_model_GBps"] = l.nccl_model_GBps;
  write_sources(j, l.source, l.field_sources, l.origin);
  return j;
}

ordered_json scaleup_json(const ScaleUpDomain& u) {
  ordered_json j;
  j["topology"] = std::string(to_string(u.topology));
  j["link"] = u.link;
  j["domain_gpus"] = u.domain_gpus;
  j["links_per_gpu"] = u.links_per_gpu;
  if (!u.switch_name.empty()) {
    j["switch"] = u.switch_name;
    j["switches"] = u.switches;
  }
  if (!u.link_matrix.empty()) j["link_matrix"] = u.link_matrix;
  j["per_gpu_per_direction_GBps"] = u.per_gpu_per_direction_GBps;
  j["per_gpu_bidirectional_GBps"] = u.per_gpu_bidirectional_GBps;
  return j;
}

ordered_json system_json(const SystemSpec& s) {
  ordered_json j;
  j["name"] = s.name;
  j["description"] = s.description;
  j["gpu"] = s.gpu;
  j["gpus_per_node"] = s.gpus_per_node;
  j["hosts_per_node"] = s.hosts_per_node;
  j["scaleup"] = scaleup_json(s.scaleup);
  j["nics_per_node"] = s.nics_per_node;
  j["nic_link"] = s.nic_link;
  j["nic_per_direction_GBps"] = s.nic_per_direction_GBps;
  j["nic_per_gpu_per_direction_GBps"] = s.nic_per_gpu_per_direction_GBps();
  j["storage_nics"] = s.storage_nics;
  j["host_memory_bytes"] = s.host_memory_bytes;
  j["cpu"] = s.cpu;
  j["host_link"] = s.host_link;
  j["gpus_per_host_link"] = s.gpus_per_host_link;
  j["host_per_gpu_per_direction_GBps"] = s.host_per_direction_GBps;
  j["nvme_read_GBps"] = s.nvme_read_GBps;
  j["nvme_write_GBps"] = s.nvme_write_GBps;
  j["nvme_drives"] = s.nvme_drives;
  j["nvme_bytes"] = s.nvme_bytes;
  j["power_W"] = s.power_W;
  j["leaf_nodes"] = s.leaf_nodes;
  j["spine_nodes"] = s.spine_nodes;
  j["spine_oversubscription"] = s.spine_oversubscription;
  write_sources(j, s.source, s.field_sources, s.origin);
  return j;
}

template <typename T>
void get(const json& j, const char* key, T& out) {
  if (const auto it = j.find(key); it != j.end() && !it->is_null()) detail::read(*it, out, key);
}

void read_sources(const json& j, std::string& source, std::map<std::string, std::string>& fields,
                  std::string& origin) {
  get(j, "source", source);
  if (j.contains("sources")) fields = j.at("sources").get<std::map<std::string, std::string>>();
  get(j, "origin", origin);
}

GpuSpec gpu_from(const json& j) {
  GpuSpec g;
  get(j, "name", g.name);
  get(j, "vendor", g.vendor);
  get(j, "description", g.description);
  get(j, "device_names", g.device_names);
  get(j, "architecture", g.architecture);
  get(j, "compute_arch", g.compute_arch);
  get(j, "sm_version", g.sm_version);
  get(j, "form_factor", g.form_factor);
  get(j, "memory_type", g.memory_type);
  get(j, "marketed_memory_GB", g.marketed_memory_GB);
  get(j, "usable_memory_bytes", g.usable_memory_bytes);
  get(j, "memory_GBps", g.memory_GBps);
  if (j.contains("dense_tflops"))
    for (const auto& [dtype, tflops] : j.at("dense_tflops").items()) g.dense_tflops[dtype] = tflops.get<double>();
  get(j, "scaleup_link", g.scaleup_link);
  get(j, "scaleup_links", g.scaleup_links);
  get(j, "scaleup_per_direction_GBps", g.scaleup_per_direction_GBps);
  get(j, "scaleup_bidirectional_GBps", g.scaleup_bidirectional_GBps);
  get(j, "host_link", g.host_link);
  get(j, "host_per_direction_GBps", g.host_per_direction_GBps);
  get(j, "best_published_mfu_causal", g.best_published_mfu_causal);
  get(j, "board_power_W", g.board_power_W);
  read_sources(j, g.source, g.field_sources, g.origin);
  return g;
}

LinkSpec link_from(const json& j) {
  LinkSpec l;
  get(j, "name", l.name);
  std::string kind;
  get(j, "kind", kind);
  for (LinkKind k : {LinkKind::pcie, LinkKind::nvlink, LinkKind::nvswitch, LinkKind::xgmi, LinkKind::c2c,
                     LinkKind::infiniband, LinkKind::ethernet})
    if (to_string(k) == kind) l.kind = k;
  get(j, "description", l.description);
  get(j, "generation", l.generation);
  get(j, "per_direction_GBps", l.per_direction_GBps);
  get(j, "bidirectional_GBps", l.bidirectional_GBps);
  get(j, "latency_us", l.latency_us);
  get(j, "typical_links_per_gpu", l.typical_links_per_gpu);
  get(j, "ports", l.ports);
  get(j, "port_link", l.port_link);
  get(j, "reported_rate_GBps", l.reported_rate_GBps);
  get(j, "nccl_model_GBps", l.nccl_model_GBps);
  read_sources(j, l.source, l.field_sources, l.origin);
  return l;
}

ScaleUpDomain scaleup_from(const json& j) {
  ScaleUpDomain u;
  std::string topology;
  get(j, "topology", topology);
  for (ScaleUpTopology t : {ScaleUpTopology::none, ScaleUpTopology::nvswitch, ScaleUpTopology::full_mesh,
                            ScaleUpTopology::hybrid_cube_mesh, ScaleUpTopology::pairs})
    if (to_string(t) == topology) u.topology = t;
  get(j, "link", u.link);
  get(j, "domain_gpus", u.domain_gpus);
  get(j, "links_per_gpu", u.links_per_gpu);
  get(j, "switch", u.switch_name);
  get(j, "switches", u.switches);
  if (j.contains("link_matrix")) u.link_matrix = j.at("link_matrix").get<std::vector<std::vector<int>>>();
  get(j, "per_gpu_per_direction_GBps", u.per_gpu_per_direction_GBps);
  get(j, "per_gpu_bidirectional_GBps", u.per_gpu_bidirectional_GBps);
  return u;
}

SystemSpec system_from(const json& j) {
  SystemSpec s;
  get(j, "name", s.name);
  get(j, "description", s.description);
  get(j, "gpu", s.gpu);
  get(j, "gpus_per_node", s.gpus_per_node);
  get(j, "hosts_per_node", s.hosts_per_node);
  if (j.contains("scaleup")) s.scaleup = scaleup_from(j.at("scaleup"));
  get(j, "nics_per_node", s.nics_per_node);
  get(j, "nic_link", s.nic_link);
  get(j, "nic_per_direction_GBps", s.nic_per_direction_GBps);
  get(j, "storage_nics", s.storage_nics);
  get(j, "host_memory_bytes", s.host_memory_bytes);
  get(j, "cpu", s.cpu);
  get(j, "host_link", s.host_link);
  get(j, "gpus_per_host_link", s.gpus_per_host_link);
  get(j, "host_per_gpu_per_direction_GBps", s.host_per_direction_GBps);
  get(j, "nvme_read_GBps", s.nvme_read_GBps);
  get(j, "nvme_write_GBps", s.nvme_write_GBps);
  get(j, "nvme_drives", s.nvme_drives);
  get(j, "nvme_bytes", s.nvme_bytes);
  get(j, "power_W", s.power_W);
  get(j, "leaf_nodes", s.leaf_nodes);
  get(j, "spine_nodes", s.spine_nodes);
  get(j, "spine_oversubscription", s.spine_oversubscription);
  read_sources(j, s.source, s.field_sources, s.origin);
  return s;
}

template <typename T, typename Write>
ordered_json list_json(const std::vector<T>& entries, Write write) {
  ordered_json list = ordered_json::array();
  for (const auto& e : entries) list.push_back(write(e));
  return list;
}

template <typename T, typename Read>
std::vector<T> list_from(const json& list, Read read) {
  std::vector<T> out;
  for (const auto& e : list) out.push_back(read(e));
  return out;
}

}  // namespace

nlohmann::ordered_json to_json(const CatalogResult& r) {
  if (r.detail) {  // one entry: the entry itself
    if (r.gpus && !r.gpus->empty()) return gpu_json(r.gpus->front());
    if (r.links && !r.links->empty()) return link_json(r.links->front());
    if (r.systems && !r.systems->empty()) return system_json(r.systems->front());
    if (r.models && !r.models->empty()) return detail::members_to_json(r.models->front());
  }
  ordered_json j = ordered_json::object();
  if (r.gpus) j["gpus"] = list_json(*r.gpus, gpu_json);
  if (r.links) j["links"] = list_json(*r.links, link_json);
  if (r.systems) j["systems"] = list_json(*r.systems, system_json);
  if (r.models) j["models"] = detail::members_to_json(*r.models);
  return j;
}

// A listing holds arrays by kind; a single entry is recognised by a key only its kind has.
template <> CatalogResult from_json<CatalogResult>(const nlohmann::json& j) {
  CatalogResult r;
  if (!j.is_object()) throw InputError("catalog", j.dump(), "a catalog listing or entry as gpuplan writes it");
  const bool listing = j.contains("gpus") || j.contains("links") || j.contains("systems") || j.contains("models");
  if (!listing && !j.empty()) {
    r.detail = true;
    if (j.contains("vendor")) r.gpus = std::vector<GpuSpec>{gpu_from(j)};
    else if (j.contains("per_direction_GBps")) r.links = std::vector<LinkSpec>{link_from(j)};
    else if (j.contains("gpus_per_node")) r.systems = std::vector<SystemSpec>{system_from(j)};
    else r.models = std::vector<ModelSummary>{detail::members_from_json<ModelSummary>(j)};
    return r;
  }
  if (j.contains("gpus")) r.gpus = list_from<GpuSpec>(j.at("gpus"), gpu_from);
  if (j.contains("links")) r.links = list_from<LinkSpec>(j.at("links"), link_from);
  if (j.contains("systems")) r.systems = list_from<SystemSpec>(j.at("systems"), system_from);
  if (j.contains("models")) r.models = detail::members_from_json<std::vector<ModelSummary>>(j.at("models"));
  return r;
}

}  // namespace gpuplan::api
