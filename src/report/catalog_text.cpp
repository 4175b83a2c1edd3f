// What `gpuplan catalog` prints: a table per kind with each entry's source, or one entry's every field.
#include <fmt/format.h>

#include <algorithm>

#include "gpuplan/api.hpp"
#include "gpuplan/units.hpp"
#include "util/json_text.hpp"

namespace gpuplan::api {

namespace {

using Row = std::vector<std::string>;

std::string gbps(double x) { return x == 0 ? "-" : fmt::format("{:g}", x); }

// Fixed-width table: header, rows, then each row's source on its own indented line.
std::string table(const Row& header, const std::vector<Row>& rows, const std::vector<std::string>& sources) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const Row& r) {
    std::string s;
    for (std::size_t c = 0; c < r.size(); ++c) s += fmt::format("{:<{}}  ", r[c], width[c]);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += line(rows[i]);
    if (i < sources.size() && !sources[i].empty()) out += fmt::format("    source: {}\n", sources[i]);
  }
  return out;
}

std::string gpus_text(const std::vector<GpuSpec>& gpus) {
  std::vector<Row> rows;
  std::vector<std::string> sources;
  for (const auto& g : gpus) {
    auto tf = [&](const char* d) { return g.has_dtype(d) ? fmt::format("{:g}", g.tflops(d)) : std::string("-"); };
    const std::string scaleup = g.scaleup_link.empty() ? "-"
                                                       : fmt::format("{} x{} = {:g}", g.scaleup_link, g.scaleup_links,
                                                                     g.scaleup_bidirectional_GBps);
    rows.push_back({g.name, fmt::format("{}", g.usable_memory_bytes),
                    format_bytes(static_cast<double>(g.usable_memory_bytes)), gbps(g.memory_GBps), tf("fp32"),
                    tf("bf16"), tf("fp8"), tf("fp4"), scaleup, g.host_link, g.compute_arch});
    sources.push_back(g.source);
  }
  return "GPUs: usable memory as the driver reports it; dense peak TFLOP/s; NVLink/xGMI GB/s both ways\n\n" +
         table({"NAME", "USABLE_BYTES", "USABLE", "MEM_GBps", "FP32", "BF16", "FP8", "FP4", "SCALE-UP (GBps bidir)",
                "HOST", "ARCH"},
               rows, sources);
}

std::string links_text(const std::vector<LinkSpec>& links) {
  std::vector<Row> rows;
  std::vector<std::string> sources;
  for (const auto& l : links) {
    std::string per_gpu = "-";
    if (l.typical_links_per_gpu > 0)
      per_gpu = fmt::format("{} x {:g} = {:g}", l.typical_links_per_gpu, l.bidirectional_GBps,
                            l.typical_per_gpu_bidirectional_GBps());
    else if (l.ports > 0)
      per_gpu = fmt::format("{} ports of {}", l.ports, l.port_link);
    rows.push_back({l.name, std::string(to_string(l.kind)), gbps(l.per_direction_GBps), gbps(l.bidirectional_GBps),
                    fmt::format("{:g}", l.latency_us), per_gpu, l.description});
    sources.push_back(l.source);
  }
  return "Links: GB/s (1 GB = 1e9 bytes) one way and both ways; latency in microseconds\n\n" +
         table({"NAME", "KIND", "PER_DIR_GBps", "BIDIR_GBps", "LAT_us", "PER GPU (bidir) / SWITCH", "DESCRIPTION"},
               rows, sources);
}

std::string systems_text(const std::vector<SystemSpec>& systems) {
  std::vector<Row> rows;
  std::vector<std::string> sources;
  for (const auto& s : systems) {
    const auto& u = s.scaleup;
    const std::string scaleup = u.topology == ScaleUpTopology::none
                                    ? "none (PCIe)"
                                    : fmt::format("{} {} of {}, {:g}/GPU", to_string(u.topology), u.link,
                                                  u.domain_gpus, u.per_gpu_bidirectional_GBps);
    const std::string nics = s.nics_per_node == 0 ? "-" : fmt::format("{} x {}", s.nics_per_node, s.nic_link);
    rows.push_back({s.name, fmt::format("{} x {}", s.gpus_per_node, s.gpu), scaleup, nics,
                    gbps(s.nic_per_gpu_per_direction_GBps()), format_bytes(static_cast<double>(s.host_memory_bytes)),
                    fmt::format("{} ({:g})", s.host_link, s.host_per_direction_GBps)});
    sources.push_back(s.source);
  }
  return "Systems: one node as --nodes counts it; scale-up GB/s both ways per GPU; NIC GB/s one way per GPU\n\n" +
         table({"NAME", "GPUS", "SCALE-UP (GBps bidir)", "NICS", "NIC/GPU_GBps", "HOST_MEMORY", "HOST LINK/GPU (GBps)"},
               rows, sources);
}

std::string models_text(const std::vector<ModelSummary>& models) {
  std::vector<Row> rows;
  for (const auto& m : models)
    rows.push_back({m.name, m.model_type, fmt::format("{}", m.layers), fmt::format("{}", m.hidden),
                    format_count(static_cast<double>(m.total_params)),
                    format_count(static_cast<double>(m.active_params))});
  return "Models: parameters counted from the architecture\n\n" +
         table({"NAME", "TYPE", "LAYERS", "HIDDEN", "TOTAL_PARAMS", "ACTIVE_PARAMS"}, rows, {});
}

}  // namespace

std::string to_text(const CatalogResult& r) {
  if (r.detail) return gpuplan::detail::json_text(to_json(r), 2) + "\n";
  std::vector<std::string> sections;
  if (r.gpus) sections.push_back(gpus_text(*r.gpus));
  if (r.links) sections.push_back(links_text(*r.links));
  if (r.systems) sections.push_back(systems_text(*r.systems));
  if (r.models) sections.push_back(models_text(*r.models));
  std::string out;
  for (std::size_t i = 0; i < sections.size(); ++i) out += (i > 0 ? "\n" : "") + sections[i];
  return out + "\nDetails of one entry, every field with its source: gpuplan catalog KIND NAME\n";
}

}  // namespace gpuplan::api
