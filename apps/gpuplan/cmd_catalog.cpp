// gpuplan catalog [gpus|links|systems|models] [NAME] [--json] [--catalog FILE]: what the built-in catalogs hold,
// with the source of every entry.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::cli {
namespace {

using nlohmann::ordered_json;

struct CatalogOptions {
  std::string what;                  // "", gpus, links, systems, models
  std::string name;                  // one entry in detail
  bool json = false;
  std::vector<std::string> catalog_files;
};

ordered_json sources_json(const std::string& source, const std::map<std::string, std::string>& fields) {
  ordered_json j;
  j["source"] = source;
  if (!fields.empty()) j["sources"] = fields;
  return j;
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
  for (const auto& [k, v] : g.dense_tflops) j["dense_tflops"][k] = v;
  j["scaleup_link"] = g.scaleup_link;
  j["scaleup_links"] = g.scaleup_links;
  j["scaleup_per_direction_GBps"] = g.scaleup_per_direction_GBps;
  j["scaleup_bidirectional_GBps"] = g.scaleup_bidirectional_GBps;
  j["host_link"] = g.host_link;
  j["host_per_direction_GBps"] = g.host_per_direction_GBps;
  j.update(sources_json(g.source, g.field_sources));
  j["origin"] = g.origin;
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
  j.update(sources_json(l.source, l.field_sources));
  j["origin"] = l.origin;
  return j;
}

ordered_json system_json(const SystemSpec& s) {
  ordered_json j;
  j["name"] = s.name;
  j["description"] = s.description;
  j["gpu"] = s.gpu;
  j["gpus_per_node"] = s.gpus_per_node;
  j["hosts_per_node"] = s.hosts_per_node;
  ordered_json u;
  u["topology"] = std::string(to_string(s.scaleup.topology));
  u["link"] = s.scaleup.link;
  u["domain_gpus"] = s.scaleup.domain_gpus;
  u["links_per_gpu"] = s.scaleup.links_per_gpu;
  if (!s.scaleup.switch_name.empty()) {
    u["switch"] = s.scaleup.switch_name;
    u["switches"] = s.scaleup.switches;
  }
  if (!s.scaleup.link_matrix.empty()) u["link_matrix"] = s.scaleup.link_matrix;
  u["per_gpu_per_direction_GBps"] = s.scaleup.per_gpu_per_direction_GBps;
  u["per_gpu_bidirectional_GBps"] = s.scaleup.per_gpu_bidirectional_GBps;
  j["scaleup"] = u;
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
  j["nvme_bytes"] = s.nvme_bytes;
  j.update(sources_json(s.source, s.field_sources));
  j["origin"] = s.origin;
  return j;
}

ordered_json model_json(const std::string& name) {
  const ModelConfig m = model_from_catalog(name);
  const ParamCounts p = count_params(m);
  ordered_json j;
  j["name"] = name;
  j["model_type"] = m.model_type;
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["total_params"] = p.total;
  j["active_params"] = p.active;
  return j;
}

std::string gbps(double x) { return x == 0 ? "-" : fmt::format("{:g}", x); }

// Fixed-width table: header, rows, then each row's source on its own indented line.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<std::string>& sources) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t c = 0; c < r.size(); ++c) s += fmt::format("{:<{}}  ", r[c], width[c]);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    fmt::print("{}\n", s);
  };
  line(header);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    line(rows[i]);
    if (i < sources.size() && !sources[i].empty()) fmt::print("    source: {}\n", sources[i]);
  }
}

void print_gpus(const HardwareCatalog& c) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> sources;
  for (const auto& [name, g] : c.gpus()) {
    auto tf = [&](const char* d) { return g.has_dtype(d) ? fmt::format("{:g}", g.tflops(d)) : std::string("-"); };
    const std::string scaleup =
        g.scaleup_link.empty() ? "-"
                               : fmt::format("{} x{} = {:g}", g.scaleup_link, g.scaleup_links,
                                             g.scaleup_bidirectional_GBps);
    rows.push_back({name, fmt::format("{}", g.usable_memory_bytes), format_bytes(static_cast<double>(g.usable_memory_bytes)),
                    gbps(g.memory_GBps), tf("fp32"), tf("bf16"), tf("fp8"), tf("fp4"), scaleup, g.host_link,
                    g.compute_arch});
    sources.push_back(g.source);
  }
  fmt::print("GPUs: usable memory as the driver reports it; dense peak TFLOP/s; NVLink/xGMI GB/s both ways\n\n");
  print_table({"NAME", "USABLE_BYTES", "USABLE", "MEM_GBps", "FP32", "BF16", "FP8", "FP4", "SCALE-UP (GBps bidir)",
               "HOST", "ARCH"},
              rows, sources);
}

void print_links(const HardwareCatalog& c) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> sources;
  for (const auto& [name, l] : c.links()) {
    std::string per_gpu = "-";
    if (l.typical_links_per_gpu > 0)
      per_gpu = fmt::format("{} x {:g} = {:g}", l.typical_links_per_gpu, l.bidirectional_GBps,
                            l.typical_per_gpu_bidirectional_GBps());
    else if (l.ports > 0)
      per_gpu = fmt::format("{} ports of {}", l.ports, l.port_link);
    rows.push_back({name, std::string(to_string(l.kind)), gbps(l.per_direction_GBps), gbps(l.bidirectional_GBps),
                    fmt::format("{:g}", l.latency_us), per_gpu, l.description});
    sources.push_back(l.source);
  }
  fmt::print("Links: GB/s (1 GB = 1e9 bytes) one way and both ways; latency in microseconds\n\n");
  print_table({"NAME", "KIND", "PER_DIR_GBps", "BIDIR_GBps", "LAT_us", "PER GPU (bidir) / SWITCH", "DESCRIPTION"},
              rows, sources);
}

void print_systems(const HardwareCatalog& c) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> sources;
  for (const auto& [name, s] : c.systems()) {
    const auto& u = s.scaleup;
    const std::string scaleup =
        u.topology == ScaleUpTopology::none
            ? "none (PCIe)"
            : fmt::format("{} {} of {}, {:g}/GPU", to_string(u.topology), u.link, u.domain_gpus,
                          u.per_gpu_bidirectional_GBps);
    const std::string nics = s.nics_per_node == 0 ? "-" : fmt::format("{} x {}", s.nics_per_node, s.nic_link);
    rows.push_back({name, fmt::format("{} x {}", s.gpus_per_node, s.gpu), scaleup, nics,
                    gbps(s.nic_per_gpu_per_direction_GBps()), format_bytes(static_cast<double>(s.host_memory_bytes)),
                    fmt::format("{} ({:g})", s.host_link, s.host_per_direction_GBps)});
    sources.push_back(s.source);
  }
  fmt::print("Systems: one node as --nodes counts it; scale-up GB/s both ways per GPU; NIC GB/s one way per GPU\n\n");
  print_table({"NAME", "GPUS", "SCALE-UP (GBps bidir)", "NICS", "NIC/GPU_GBps", "HOST_MEMORY", "HOST LINK/GPU (GBps)"},
              rows, sources);
}

void print_models() {
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : model_catalog_names()) {
    const ModelConfig m = model_from_catalog(name);
    const ParamCounts p = count_params(m);
    rows.push_back({name, m.model_type, fmt::format("{}", m.layers), fmt::format("{}", m.hidden),
                    format_count(static_cast<double>(p.total)), format_count(static_cast<double>(p.active))});
  }
  fmt::print("Models: parameters counted from the architecture\n\n");
  print_table({"NAME", "TYPE", "LAYERS", "HIDDEN", "TOTAL_PARAMS", "ACTIVE_PARAMS"}, rows, {});
}

void print_detail(const ordered_json& j) { fmt::print("{}\n", j.dump(2)); }

void run_catalog(const CatalogOptions& o) {
  static const std::vector<std::string> kinds = {"gpus", "links", "systems", "models"};
  if (!o.what.empty() && std::find(kinds.begin(), kinds.end(), o.what) == kinds.end()) {
    const std::string hint = did_you_mean(o.what, kinds);
    throw InputError("catalog", "'" + o.what + "'" + (hint.empty() ? "" : " (" + hint + ")"),
                     "gpus, links, systems or models");
  }
  if (!o.name.empty() && o.what.empty()) throw InputError("catalog NAME", o.name, "a kind first: gpus, links, systems or models");

  HardwareCatalog catalog = HardwareCatalog::builtin();
  for (const auto& f : o.catalog_files) catalog.merge_json(read_text_file(f, "--catalog"), f);

  if (!o.name.empty()) {   // one entry, every field with its sources
    if (o.what == "gpus") print_detail(gpu_json(catalog.gpu(o.name)));
    else if (o.what == "links") print_detail(link_json(catalog.link(o.name)));
    else if (o.what == "systems") print_detail(system_json(catalog.system(o.name)));
    else print_detail(model_json(o.name));
    return;
  }
  const bool all = o.what.empty();
  if (o.json) {
    ordered_json out;
    if (all || o.what == "gpus") {
      out["gpus"] = ordered_json::array();
      for (const auto& [n, g] : catalog.gpus()) out["gpus"].push_back(gpu_json(g));
    }
    if (all || o.what == "links") {
      out["links"] = ordered_json::array();
      for (const auto& [n, l] : catalog.links()) out["links"].push_back(link_json(l));
    }
    if (all || o.what == "systems") {
      out["systems"] = ordered_json::array();
      for (const auto& [n, s] : catalog.systems()) out["systems"].push_back(system_json(s));
    }
    if (all || o.what == "models") {
      out["models"] = ordered_json::array();
      for (const auto& n : model_catalog_names()) out["models"].push_back(model_json(n));
    }
    fmt::print("{}\n", out.dump(2));
    return;
  }
  bool first = true;
  auto section = [&](auto&& print) {
    if (!first) fmt::print("\n");
    first = false;
    print();
  };
  if (all || o.what == "gpus") section([&] { print_gpus(catalog); });
  if (all || o.what == "links") section([&] { print_links(catalog); });
  if (all || o.what == "systems") section([&] { print_systems(catalog); });
  if (all || o.what == "models") section([&] { print_models(); });
  if (!o.json) fmt::print("\nDetails of one entry, every field with its source: gpuplan catalog KIND NAME\n");
}

}  // namespace

void add_catalog_command(CLI::App& app) {
  auto opts = std::make_shared<CatalogOptions>();
  CLI::App* sub = app.add_subcommand(
      "catalog", "List the built-in GPUs, links, systems and models, each with its source (docs/hardware.md)");
  sub->add_option("kind", opts->what, "gpus, links, systems or models (default: all)");
  sub->add_option("name", opts->name, "show one entry with every field and its source");
  sub->add_flag("--json", opts->json, "print JSON");
  sub->add_option("--catalog", opts->catalog_files,
                  "JSON file adding or overriding hardware entries (same schema as data/hardware/*.json); repeatable");
  sub->callback([opts] { run_catalog(*opts); });
}

}  // namespace gpuplan::cli
