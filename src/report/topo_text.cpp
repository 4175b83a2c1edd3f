// What `gpuplan topo` prints: the link matrix with rates, NVLink domains, GPU-NIC pairing, advice and warnings.
#include <fmt/format.h>

#include <algorithm>

#include "gpuplan/api.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::api {

namespace {

std::string set_text(const std::vector<std::int64_t>& gpus) {
  return format_gpu_set(std::vector<int>(gpus.begin(), gpus.end()));
}

std::string domains_text(const std::vector<std::vector<std::int64_t>>& domains) {
  std::string s;
  for (const auto& d : domains) s += (s.empty() ? "" : "  ") + fmt::format("[{}]", set_text(d));
  return s;
}

std::string link_matrix(const TopoResult& r) {
  const std::size_t n = r.gpus.size();
  std::string out = fmt::format("Links (code / GB/s per direction):\n{:>8}", "");
  for (std::size_t j = 0; j < n; ++j) out += fmt::format("{:>12}", fmt::format("GPU{}", j));
  out += "\n";
  for (std::size_t i = 0; i < n; ++i) {
    out += fmt::format("{:>8}", fmt::format("GPU{}", i));
    for (std::size_t j = 0; j < n; ++j)
      out += fmt::format("{:>12}", i == j ? std::string("X") : fmt::format("{} {:.4g}", r.links[i][j], r.bandwidth_GBps[i][j]));
    out += "\n";
  }
  return out;
}

// The nearest NIC of a GPU with the path code to it: "mlx5_0 (PIX)".
std::string nearest_nic(const TopoResult& r, const TopoGpuReport& g) {
  if (!g.nearest_nic) return "-";
  for (const auto& nic : r.nics)
    if (nic.name == *g.nearest_nic)
      return fmt::format("{} ({})", nic.name, nic.gpu_codes[static_cast<std::size_t>(g.index)]);
  return *g.nearest_nic;
}

// The NUMA nodes a GPU lists, compactly ("0,3-9,11-17" on Grace); "-" when not given.
std::string numa_text(const TopoGpuReport& g) {
  if (!g.numa_affinity.empty()) return set_text(g.numa_affinity);
  return g.numa_node ? std::to_string(*g.numa_node) : std::string("-");
}

// A NIC far from every GPU beside NICs near some: likely storage or management. Where every NIC is far (Grace
// trays print SYS for all), no such guess.
std::string far_nic_text(const TopoResult& r) {
  const bool some_nic_near =
      std::any_of(r.nics.begin(), r.nics.end(), [](const TopoNicReport& nic) { return !nic.nearest_gpus.empty(); });
  return some_nic_near ? "- (far from every GPU: storage/management?)" : "- (far from every GPU, as is every NIC)";
}

std::string pairing(const TopoResult& r) {
  std::size_t numa_width = 6;  // "NUMA" and a one-digit node, as before lists were read
  for (const auto& g : r.gpus) numa_width = std::max(numa_width, numa_text(g).size() + 2);
  std::string out = fmt::format("\nGPU   {:<{}}CPU affinity        nearest NIC\n", "NUMA", numa_width);
  for (const auto& g : r.gpus)
    out += fmt::format("GPU{:<3}{:<{}}{:<20}{}\n", g.index, numa_text(g), numa_width, g.cpu_affinity.value_or("-"),
                       nearest_nic(r, g));
  if (!r.nics.empty()) {
    out += "\nNIC          nearest GPUs\n";
    for (const auto& nic : r.nics)
      out += fmt::format("{:<13}{}\n", nic.name,
                         nic.nearest_gpus.empty() ? far_nic_text(r) : set_text(nic.nearest_gpus));
  }
  return out;
}

}  // namespace

std::string to_text(const TopoResult& r) {
  const std::size_t n = r.gpus.size();
  std::string out = fmt::format("Topology from {}: {} GPU{}, {} NIC{}\n", r.format, n, n == 1 ? "" : "s",
                                r.nics.size(), r.nics.size() == 1 ? "" : "s");
  out += fmt::format("Generation: {} ({})\n", r.generation.value_or("unknown"), r.generation_reason);
  if (r.rates_source) out += fmt::format("Rates from {}\n", *r.rates_source);
  out.append("\n").append(link_matrix(r));
  out += fmt::format("\n{} domains: {}\n", r.scaleup_link, domains_text(r.nvlink_domains));
  out += fmt::format("All-to-all groups: {}   (largest tensor/expert-parallel size inside one: {})\n",
                     domains_text(r.all_to_all_groups), r.max_tp_in_domain);
  out += pairing(r);
  out += "\nAdvice:\n";
  for (const auto& a : r.advice) out += fmt::format("  - {}\n", a);
  if (!r.warnings.empty()) {
    out += "\nWarnings:\n";
    for (const auto& w : r.warnings) out += fmt::format("  - {}\n", w);
  }
  return out;
}

}  // namespace gpuplan::api
