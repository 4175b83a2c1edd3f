// The hardware catalog: reading, merging and resolving data/hardware/*.json and user catalog files.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/names.hpp"
#include "hardware/json_fields.hpp"
#include "util/embedded_data.hpp"
#include "util/json_input.hpp"

namespace gpuplan {

using nlohmann::json;
using hwjson::Entry;

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::pcie: return "pcie";
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::nvswitch: return "nvswitch";
    case LinkKind::xgmi: return "xgmi";
    case LinkKind::c2c: return "c2c";
    case LinkKind::infiniband: return "infiniband";
    case LinkKind::ethernet: return "ethernet";
  }
  return "?";
}

std::string_view to_string(ScaleUpTopology topology) {
  switch (topology) {
    case ScaleUpTopology::none: return "none";
    case ScaleUpTopology::nvswitch: return "nvswitch";
    case ScaleUpTopology::full_mesh: return "full-mesh";
    case ScaleUpTopology::hybrid_cube_mesh: return "hybrid-cube-mesh";
    case ScaleUpTopology::pairs: return "pairs";
  }
  return "?";
}

double GpuSpec::tflops(std::string_view dtype) const {
  const auto it = dense_tflops.find(dtype);
  if (it != dense_tflops.end()) return it->second;
  std::string have;
  for (const auto& [k, v] : dense_tflops) have += (have.empty() ? "" : ", ") + k;
  throw InputError("dtype", fmt::format("'{}' (no dense peak listed for {})", dtype, name),
                   have.empty() ? std::string("none listed") : have);
}

double SystemSpec::pair_per_direction_GBps(int i, int j) const {
  if (i < 0 || j < 0 || i >= gpus_per_node || j >= gpus_per_node)
    throw InputError("GPU index", fmt::format("{} and {}", i, j),
                     fmt::format("0 to {} on {}", gpus_per_node - 1, name));
  if (i == j) throw InputError("GPU index", fmt::format("{} and {} (the same GPU)", i, j), "two different GPUs");
  switch (scaleup.topology) {
    case ScaleUpTopology::none: return 0;
    case ScaleUpTopology::nvswitch: return scaleup.per_gpu_per_direction_GBps;
    case ScaleUpTopology::full_mesh:
      // Each GPU's links are spread evenly over its peers.
      return scaleup.per_gpu_per_direction_GBps / (scaleup.domain_gpus - 1);
    case ScaleUpTopology::hybrid_cube_mesh:
      return scaleup.link_matrix[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] *
             scaleup.link_per_direction_GBps;
    case ScaleUpTopology::pairs: return (i / 2 == j / 2) ? scaleup.per_gpu_per_direction_GBps : 0.0;
  }
  return 0;
}

double SystemSpec::nic_per_gpu_per_direction_GBps() const {
  if (gpus_per_node <= 0) return 0;
  return nics_per_node * nic_per_direction_GBps / gpus_per_node;
}

namespace {

constexpr const char* kNameRule = "lowercase letters, digits, '.' and '-', starting with a letter or digit";

bool valid_name(std::string_view name) {
  if (name.empty() || !(std::islower(static_cast<unsigned char>(name[0])) ||
                        std::isdigit(static_cast<unsigned char>(name[0]))))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
           c == '.';
  });
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = {"gpus", "links", "systems"};
  return names;
}

LinkKind parse_link_kind(const Entry& e) {
  static const std::vector<std::pair<std::string, LinkKind>> kinds = {
      {"pcie", LinkKind::pcie},           {"nvlink", LinkKind::nvlink}, {"nvswitch", LinkKind::nvswitch},
      {"xgmi", LinkKind::xgmi},           {"c2c", LinkKind::c2c},       {"infiniband", LinkKind::infiniband},
      {"ethernet", LinkKind::ethernet}};
  return e.choice("kind", kinds);
}

ScaleUpTopology parse_topology(const Entry& e) {
  static const std::vector<std::pair<std::string, ScaleUpTopology>> kinds = {
      {"none", ScaleUpTopology::none},
      {"nvswitch", ScaleUpTopology::nvswitch},
      {"full-mesh", ScaleUpTopology::full_mesh},
      {"hybrid-cube-mesh", ScaleUpTopology::hybrid_cube_mesh},
      {"pairs", ScaleUpTopology::pairs}};
  return e.choice("topology", kinds);
}

LinkSpec parse_link(const std::string& name, const json& j, const std::string& origin) {
  Entry e(j, origin, "links." + name,
          {"kind", "description", "generation", "per_direction_GBps", "bidirectional_GBps", "latency_us",
           "typical_links_per_gpu", "ports", "port_link", "reported_rate_GBps", "nccl_model_GBps", "source",
           "sources"});
  e.require({"kind", "description", "per_direction_GBps", "bidirectional_GBps", "latency_us", "source"});
  LinkSpec l;
  l.name = name;
  l.origin = origin;
  l.kind = parse_link_kind(e);
  l.description = e.string("description");
  l.generation = e.integer("generation", 0, 0, 100);
  l.per_direction_GBps = e.number("per_direction_GBps", std::nullopt, 1e-6, 1e7);
  l.bidirectional_GBps = e.number("bidirectional_GBps", std::nullopt, 1e-6, 2e7);
  // Every link in this catalog is full duplex: both figures are stated, and they must agree.
  if (std::abs(l.bidirectional_GBps - 2 * l.per_direction_GBps) > 1e-3 * l.bidirectional_GBps)
    throw InputError(e.field("bidirectional_GBps"), fmt::format("{}", l.bidirectional_GBps),
                     fmt::format("2 x per_direction_GBps = {} (links are full duplex)", 2 * l.per_direction_GBps));
  l.latency_us = e.number("latency_us", std::nullopt, 0, 1e6);
  l.typical_links_per_gpu = e.integer("typical_links_per_gpu", 0, 0, 1000);
  l.ports = e.integer("ports", 0, 0, 100000);
  l.port_link = e.string("port_link", "");
  l.reported_rate_GBps = e.number("reported_rate_GBps", 0.0, 0, 1e7);
  l.nccl_model_GBps = e.number("nccl_model_GBps", 0.0, 0, 1e7);
  l.source = e.source();
  l.field_sources = e.sources();
  return l;
}

GpuSpec parse_gpu(const std::string& name, const json& j, const std::string& origin) {
  Entry e(j, origin, "gpus." + name,
          {"vendor", "description", "device_names", "architecture", "compute_arch", "sm_version", "form_factor",
           "memory_type", "marketed_memory_GB", "usable_memory_bytes", "memory_GBps", "dense_tflops",
           "scaleup_link", "scaleup_links", "host_link", "board_power_W", "best_published_mfu_causal", "source",
           "sources"});
  e.require({"vendor", "description", "architecture", "compute_arch", "form_factor", "memory_type",
             "marketed_memory_GB", "usable_memory_bytes", "memory_GBps", "dense_tflops", "host_link", "source"});
  GpuSpec g;
  g.name = name;
  g.origin = origin;
  g.vendor = e.string("vendor");
  g.description = e.string("description");
  g.device_names = e.string_list("device_names");
  g.architecture = e.string("architecture");
  g.compute_arch = e.string("compute_arch");
  g.sm_version = e.integer("sm_version", 0, 0, 1000);
  g.form_factor = e.string("form_factor");
  g.memory_type = e.string("memory_type");
  g.marketed_memory_GB = e.number("marketed_memory_GB", std::nullopt, 1e-3, 1e6);
  g.usable_memory_bytes = e.bytes("usable_memory_bytes");
  g.memory_GBps = e.number("memory_GBps", std::nullopt, 1e-3, 1e7);
  g.dense_tflops = e.number_map("dense_tflops", {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4",
                                                 "int8"});
  if (g.dense_tflops.empty())
    throw InputError(e.field("dense_tflops"), "{}", "at least one dtype with its dense peak TFLOP/s");
  g.scaleup_link = e.string("scaleup_link", "");
  g.scaleup_links = e.integer("scaleup_links", 0, 0, 1000);
  if (!g.scaleup_link.empty() && g.scaleup_links == 0)
    throw InputError(e.field("scaleup_links"), "0", "at least 1 when scaleup_link is set");
  g.host_link = e.string("host_link");
  g.board_power_W = e.number("board_power_W", 0.0, 0, 1e5);
  g.best_published_mfu_causal = e.number("best_published_mfu_causal", 0.0, 0, 1);
  g.source = e.source();
  g.field_sources = e.sources();
  if (g.best_published_mfu_causal > 0 && !g.field_sources.contains("best_published_mfu_causal"))
    throw InputError(e.field("sources"), "no entry for best_published_mfu_causal",
                     "the run best_published_mfu_causal comes from");
  return g;
}

std::vector<std::vector<int>> parse_matrix(const Entry& e, const char* key, int n) {
  std::vector<std::vector<int>> m;
  const json* v = e.find(key);
  if (v == nullptr) return m;
  const std::string accepted = fmt::format("a {}x{} symmetric array of link counts (0 on the diagonal)", n, n);
  if (!v->is_array() || static_cast<int>(v->size()) != n) throw InputError(e.field(key), v->dump(), accepted);
  for (const auto& row : *v) {
    if (!row.is_array() || static_cast<int>(row.size()) != n) throw InputError(e.field(key), row.dump(), accepted);
    std::vector<int> r;
    for (const auto& x : row) {
      if (!x.is_number_integer() || x.get<long long>() < 0 || x.get<long long>() > 1000)
        throw InputError(e.field(key), x.dump(), accepted);
      r.push_back(x.get<int>());
    }
    m.push_back(std::move(r));
  }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const auto a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(k);
      if (m[a][b] != m[b][a] || (i == k && m[a][b] != 0))
        throw InputError(e.field(key), fmt::format("row {} column {}", i, k), accepted);
    }
  return m;
}

SystemSpec parse_system(const std::string& name, const json& j, const std::string& origin) {
  Entry e(j, origin, "systems." + name,
          {"description", "gpu", "gpus_per_node", "hosts_per_node", "scaleup", "nics_per_node", "nic_link",
           "storage_nics", "host_memory_bytes", "cpu", "host_link", "gpus_per_host_link", "nvme_read_GBps",
           "nvme_write_GBps", "nvme_drives", "nvme_bytes", "power_W", "leaf_nodes", "spine_nodes",
           "spine_oversubscription", "source", "sources"});
  e.require({"description", "gpu", "gpus_per_node", "scaleup", "nics_per_node", "host_memory_bytes", "host_link",
             "source"});
  SystemSpec s;
  s.name = name;
  s.origin = origin;
  s.description = e.string("description");
  s.gpu = e.string("gpu");
  s.gpus_per_node = e.integer("gpus_per_node", std::nullopt, 1, 100000);
  s.hosts_per_node = e.integer("hosts_per_node", 1, 1, 100000);
  {
    Entry u = e.object("scaleup", {"topology", "link", "domain_gpus", "links_per_gpu", "switch", "switches",
                                   "link_matrix"});
    s.scaleup.topology = parse_topology(u);
    const bool none = s.scaleup.topology == ScaleUpTopology::none;
    s.scaleup.link = none ? u.string("link", "") : u.string("link");
    s.scaleup.domain_gpus = u.integer("domain_gpus", none ? 1 : s.gpus_per_node, 1, 100000);
    s.scaleup.links_per_gpu = u.integer("links_per_gpu", 0, 0, 1000);
    s.scaleup.switch_name = u.string("switch", "");
    s.scaleup.switches = u.integer("switches", 0, 0, 100000);
    if (s.scaleup.topology == ScaleUpTopology::hybrid_cube_mesh) {
      s.scaleup.link_matrix = parse_matrix(u, "link_matrix", s.gpus_per_node);
      if (s.scaleup.link_matrix.empty())
        throw InputError(u.field("link_matrix"), "(missing)", "the link counts between every GPU pair");
    } else if (u.find("link_matrix") != nullptr) {
      throw InputError(u.field("link_matrix"), "(given)", "only with topology hybrid-cube-mesh");
    }
    if (!none && s.scaleup.links_per_gpu == 0 && s.scaleup.topology != ScaleUpTopology::hybrid_cube_mesh)
      throw InputError(u.field("links_per_gpu"), "0", "at least 1 for a scale-up domain");
    if (s.scaleup.topology == ScaleUpTopology::pairs && s.scaleup.domain_gpus != 2)
      throw InputError(u.field("domain_gpus"), std::to_string(s.scaleup.domain_gpus), "2 for topology pairs");
    if (s.scaleup.topology == ScaleUpTopology::pairs && s.gpus_per_node % 2 != 0)
      throw InputError(e.field("gpus_per_node"), std::to_string(s.gpus_per_node), "an even count for pairs");
    if (s.scaleup.topology == ScaleUpTopology::full_mesh && s.scaleup.domain_gpus < 2)
      throw InputError(u.field("domain_gpus"), std::to_string(s.scaleup.domain_gpus), "at least 2 for a mesh");
    if (s.scaleup.topology == ScaleUpTopology::nvswitch && s.scaleup.switch_name.empty())
      throw InputError(u.field("switch"), "(missing)", "the NVSwitch generation, e.g. nvswitch3");
  }
  s.nics_per_node = e.integer("nics_per_node", std::nullopt, 0, 1000000);
  s.nic_link = s.nics_per_node > 0 ? e.string("nic_link") : e.string("nic_link", "");
  s.storage_nics = e.integer("storage_nics", 0, 0, 1000000);
  s.host_memory_bytes = e.bytes("host_memory_bytes");
  s.cpu = e.string("cpu", "");
  s.host_link = e.string("host_link");
  s.gpus_per_host_link = e.integer("gpus_per_host_link", 1, 1, 1000);
  s.nvme_read_GBps = e.number("nvme_read_GBps", 0.0, 0, 1e7);
  s.nvme_write_GBps = e.number("nvme_write_GBps", 0.0, 0, 1e7);
  s.nvme_drives = e.integer("nvme_drives", 0, 0, 10000);
  s.nvme_bytes = e.has("nvme_bytes") ? e.bytes("nvme_bytes") : 0;
  s.power_W = e.number("power_W", 0.0, 0, 1e9);
  s.leaf_nodes = e.integer("leaf_nodes", 0, 0, 10000000);
  s.spine_nodes = e.integer("spine_nodes", 0, 0, 10000000);
  if (s.spine_nodes > 0 && s.spine_nodes < s.leaf_nodes)
    throw InputError(e.field("spine_nodes"), std::to_string(s.spine_nodes),
                     fmt::format("at least leaf_nodes ({})", s.leaf_nodes));
  s.spine_oversubscription = e.number("spine_oversubscription", 1.0, 1.0, 1000.0);
  s.source = e.source();
  s.field_sources = e.sources();
  return s;
}

json parse_document(std::string_view text, std::string_view origin) {
  return detail::parse_json_input(text, origin, "a JSON object");
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution: the names an entry gives for other entries, and the figures derived from them

using LinkMap = std::map<std::string, LinkSpec, std::less<>>;
using GpuMap = std::map<std::string, GpuSpec, std::less<>>;
using SystemMap = std::map<std::string, SystemSpec, std::less<>>;

// Looks up a link an entry names: it must exist (else the closest names are suggested) and be of a kind that
// fits where it is used (a GPU's host link cannot be an NVLink).
class LinkResolver {
 public:
  explicit LinkResolver(const LinkMap& links) : links_(links) {
    for (const auto& [name, link] : links) names_.push_back(name);
  }

  // where: the field naming the link, for messages ("file: gpus.h100.host_link").
  const LinkSpec& operator()(const std::string& where, const std::string& link_name,
                             std::initializer_list<LinkKind> kinds) const {
    const auto it = links_.find(link_name);
    if (it == links_.end()) {
      const std::string hint = did_you_mean(link_name, names_);
      throw InputError(where, "'" + link_name + "' (unknown link" + (hint.empty() ? "" : "; " + hint) + ")",
                       "a name from 'gpuplan catalog links' or one defined under links");
    }
    if (std::find(kinds.begin(), kinds.end(), it->second.kind) == kinds.end()) {
      std::string ok;
      for (LinkKind kind : kinds) ok += (ok.empty() ? "" : ", ") + std::string(to_string(kind));
      throw InputError(where, "'" + link_name + "' (a " + std::string(to_string(it->second.kind)) + " link)",
                       "a link of kind " + ok);
    }
    return it->second;
  }

 private:
  const LinkMap& links_;
  std::vector<std::string> names_;
};

// Every NVSwitch names the NVLink generation of its ports and their count (the switch's rate derives from them).
void check_switch_ports(const LinkMap& links, const LinkResolver& resolve_link) {
  for (const auto& [name, link] : links) {
    if (link.kind != LinkKind::nvswitch) continue;
    if (link.port_link.empty() || link.ports == 0)
      throw InputError(link.origin + ": links." + name + ".port_link", "(missing)",
                       "an NVSwitch entry names its port link and port count");
    resolve_link(link.origin + ": links." + name + ".port_link", link.port_link, {LinkKind::nvlink});
  }
}

// A GPU's scale-up bandwidth (its links x the link rate) and host link rate.
void resolve_gpus(GpuMap& gpus, const LinkResolver& resolve_link) {
  for (auto& [name, gpu] : gpus) {
    const std::string where = gpu.origin + ": gpus." + name + ".";
    if (!gpu.scaleup_link.empty()) {
      const LinkSpec& link =
          resolve_link(where + "scaleup_link", gpu.scaleup_link, {LinkKind::nvlink, LinkKind::xgmi});
      gpu.scaleup_per_direction_GBps = gpu.scaleup_links * link.per_direction_GBps;
      gpu.scaleup_bidirectional_GBps = gpu.scaleup_links * link.bidirectional_GBps;
    }
    gpu.host_per_direction_GBps =
        resolve_link(where + "host_link", gpu.host_link, {LinkKind::pcie, LinkKind::c2c}).per_direction_GBps;
  }
}

// The most links any GPU has in a hybrid cube mesh: its links per GPU when the entry does not state them.
int most_links_per_gpu(const std::vector<std::vector<int>>& link_matrix) {
  int most = 0;
  for (const auto& row : link_matrix) {
    int sum = 0;
    for (int links : row) sum += links;
    most = std::max(most, sum);
  }
  return most;
}

// A system's scale-up domain: the link rate, links per GPU and the per-GPU totals, and the switch it names.
void resolve_scaleup(const std::string& where, ScaleUpDomain& scaleup, const LinkResolver& resolve_link) {
  if (scaleup.topology == ScaleUpTopology::none) return;
  const LinkSpec& link = resolve_link(where + "scaleup.link", scaleup.link, {LinkKind::nvlink, LinkKind::xgmi});
  scaleup.link_per_direction_GBps = link.per_direction_GBps;
  if (scaleup.topology == ScaleUpTopology::hybrid_cube_mesh && scaleup.links_per_gpu == 0)
    scaleup.links_per_gpu = most_links_per_gpu(scaleup.link_matrix);
  scaleup.per_gpu_per_direction_GBps = scaleup.links_per_gpu * link.per_direction_GBps;
  scaleup.per_gpu_bidirectional_GBps = scaleup.links_per_gpu * link.bidirectional_GBps;
  if (!scaleup.switch_name.empty())
    resolve_link(where + "scaleup.switch", scaleup.switch_name, {LinkKind::nvswitch});
}

// A system's GPU must be in the catalog; its scale-up, NIC and host links give the derived rates.
void resolve_systems(SystemMap& systems, const GpuMap& gpus, const LinkResolver& resolve_link) {
  std::vector<std::string> gpu_list;
  for (const auto& [name, gpu] : gpus) gpu_list.push_back(name);
  for (auto& [name, system] : systems) {
    const std::string where = system.origin + ": systems." + name + ".";
    if (gpus.find(system.gpu) == gpus.end()) {
      const std::string hint = did_you_mean(system.gpu, gpu_list);
      throw InputError(where + "gpu",
                       "'" + system.gpu + "' (unknown GPU" + (hint.empty() ? "" : "; " + hint) + ")",
                       "a name from 'gpuplan catalog gpus' or one defined under gpus");
    }
    resolve_scaleup(where, system.scaleup, resolve_link);
    if (system.nics_per_node > 0)
      system.nic_per_direction_GBps =
          resolve_link(where + "nic_link", system.nic_link, {LinkKind::infiniband, LinkKind::ethernet})
              .per_direction_GBps;
    system.host_per_direction_GBps =
        resolve_link(where + "host_link", system.host_link, {LinkKind::pcie, LinkKind::c2c}).per_direction_GBps /
        system.gpus_per_host_link;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------

const HardwareCatalog& HardwareCatalog::builtin() {
  static const HardwareCatalog catalog = [] {
    HardwareCatalog c;
    try {
      // All files first, then one resolution: entries may refer to entries of a later file.
      for (const auto& f : detail::embedded_files())
        if (f.path.rfind("hardware/", 0) == 0) c.stage(f.content, "builtin:" + std::string(f.path));
      c.rebuild();
    } catch (const InputError& ex) {
      throw std::logic_error(std::string("built-in hardware catalog is broken: ") + ex.what());
    }
    return c;
  }();
  return catalog;
}

void HardwareCatalog::merge_json(std::string_view json_text, std::string_view origin) {
  HardwareCatalog next = *this;
  next.stage(json_text, std::string(origin));
  next.rebuild();
  *this = std::move(next);
}

void HardwareCatalog::stage(std::string_view json_text, const std::string& origin) {
  json doc = parse_document(json_text, origin);
  if (!doc.is_object()) throw InputError(origin, std::string(doc.type_name()), "a JSON object with gpus, links, systems");
  HardwareCatalog& next = *this;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& section = it.key();
    if (!section.empty() && section[0] == '_') continue;   // "_comment", "_source"
    std::map<std::string, RawEntry, std::less<>>* raw = nullptr;
    if (section == "gpus") raw = &next.raw_gpus_;
    else if (section == "links") raw = &next.raw_links_;
    else if (section == "systems") raw = &next.raw_systems_;
    else {
      const std::string hint = did_you_mean(section, section_names());
      throw InputError(origin + ": " + section, "an unknown key" + (hint.empty() ? "" : " (" + hint + ")"),
                       "gpus, links, systems, or a key starting with '_'");
    }
    if (!it.value().is_object())
      throw InputError(origin + ": " + section, std::string(it.value().type_name()), "an object of named entries");
    for (auto e = it.value().begin(); e != it.value().end(); ++e) {
      const std::string& name = e.key();
      const std::string field = origin + ": " + section + "." + name;
      if (!name.empty() && name[0] == '_') continue;
      if (!valid_name(name)) throw InputError(field, "'" + name + "'", kNameRule);
      if (e.value().is_null()) {   // merge patch: null removes
        raw->erase(name);
        continue;
      }
      if (!e.value().is_object()) throw InputError(field, std::string(e.value().type_name()), "an object");
      auto found = raw->find(name);
      if (found == raw->end()) {
        json fresh = json::object();
        fresh.merge_patch(e.value());   // drops nulls inside, as a merge patch onto nothing would
        raw->emplace(name, RawEntry{fresh.dump(), origin});
      } else {
        json patched = json::parse(found->second.json);
        patched.merge_patch(e.value());
        // A field note of the old value would now mislead: point it at the file that changed the value.
        if (patched.contains("sources") && patched["sources"].is_object()) {
          const json* given = e.value().contains("sources") ? &e.value()["sources"] : nullptr;
          for (auto f = e.value().begin(); f != e.value().end(); ++f) {
            if (f.key() == "source" || f.key() == "sources") continue;
            if (patched["sources"].contains(f.key()) && (given == nullptr || !given->contains(f.key())))
              patched["sources"][f.key()] = "set in " + origin;
          }
        }
        found->second = RawEntry{patched.dump(), origin};
      }
    }
  }
}

void HardwareCatalog::rebuild() {
  // Parsed and resolved into new maps, assigned only at the end: a failure leaves the catalog as it was.
  LinkMap links;
  GpuMap gpus;
  SystemMap systems;
  for (const auto& [name, raw] : raw_links_) links.emplace(name, parse_link(name, json::parse(raw.json), raw.origin));
  for (const auto& [name, raw] : raw_gpus_) gpus.emplace(name, parse_gpu(name, json::parse(raw.json), raw.origin));
  for (const auto& [name, raw] : raw_systems_)
    systems.emplace(name, parse_system(name, json::parse(raw.json), raw.origin));

  // Links first: GPUs and systems refer to them, and systems to GPUs.
  const LinkResolver resolve_link(links);
  check_switch_ports(links, resolve_link);
  resolve_gpus(gpus, resolve_link);
  resolve_systems(systems, gpus, resolve_link);
  links_ = std::move(links);
  gpus_ = std::move(gpus);
  systems_ = std::move(systems);
}

namespace {
template <typename Map>
std::vector<std::string> keys(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `elsewhere`: what the name is in another part of the catalog ("a system"), said instead of a spelling hint.
template <typename Map>
const typename Map::mapped_type& lookup(const Map& m, std::string_view name, const char* what, const char* listing,
                                        const std::string& elsewhere) {
  auto it = m.find(lower(name));
  if (it != m.end()) return it->second;
  const std::string hint = elsewhere.empty() ? did_you_mean(name, keys(m)) : std::string(name) + " is " + elsewhere;
  throw InputError(what, "'" + std::string(name) + "' (unknown" + (hint.empty() ? "" : "; " + hint) + ")",
                   std::string("a name from 'gpuplan catalog ") + listing + "' or one added with --catalog");
}

template <typename Map>
const typename Map::mapped_type* find_in(const Map& m, std::string_view name) {
  auto it = m.find(lower(name));
  return it == m.end() ? nullptr : &it->second;
}
}  // namespace

// What a name is in the catalog, for an error that looked for it among another kind ("a system, see ...").
std::string HardwareCatalog::kind_of(std::string_view name) const {
  if (find_gpu(name) != nullptr) return "a GPU (gpuplan catalog gpus)";
  if (find_system(name) != nullptr) return "a system (gpuplan catalog systems)";
  if (find_link(name) != nullptr) return "a link (gpuplan catalog links)";
  return {};
}

const GpuSpec& HardwareCatalog::gpu(std::string_view name) const {
  return lookup(gpus_, name, "gpu", "gpus", find_gpu(name) ? std::string() : kind_of(name));
}
const LinkSpec& HardwareCatalog::link(std::string_view name) const {
  return lookup(links_, name, "link", "links", find_link(name) ? std::string() : kind_of(name));
}
const SystemSpec& HardwareCatalog::system(std::string_view name) const {
  return lookup(systems_, name, "cluster.system", "systems", find_system(name) ? std::string() : kind_of(name));
}
const GpuSpec* HardwareCatalog::find_gpu(std::string_view name) const { return find_in(gpus_, name); }
const LinkSpec* HardwareCatalog::find_link(std::string_view name) const { return find_in(links_, name); }
const SystemSpec* HardwareCatalog::find_system(std::string_view name) const { return find_in(systems_, name); }

const GpuSpec* HardwareCatalog::gpu_by_device_name(std::string_view device_name) const {
  std::string key = lower(device_name);
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front()))) key.erase(key.begin());
  for (const auto& [name, g] : gpus_)
    for (const auto& d : g.device_names)
      if (lower(d) == key) return &g;
  return nullptr;
}

const LinkSpec* HardwareCatalog::nvlink_by_reported_rate(double rate_GBps) const {
  const LinkSpec* best = nullptr;
  double best_err = 0.01;
  for (const auto& [name, l] : links_) {
    if (l.kind != LinkKind::nvlink || l.reported_rate_GBps <= 0) continue;
    const double err = std::abs(l.reported_rate_GBps - rate_GBps) / l.reported_rate_GBps;
    if (err <= best_err) {
      best = &l;
      best_err = err;
    }
  }
  return best;
}

std::vector<std::string> HardwareCatalog::gpu_names() const { return keys(gpus_); }
std::vector<std::string> HardwareCatalog::link_names() const { return keys(links_); }
std::vector<std::string> HardwareCatalog::system_names() const { return keys(systems_); }

}  // namespace gpuplan
