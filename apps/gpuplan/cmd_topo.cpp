// gpuplan topo [FILE|-] [--gpu NAME] [--nvlink FILE] [--nic-GBps X] [--catalog FILE]... [--json]
#include <fmt/core.h>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::cli {

namespace {

struct TopoArgs {
  std::string file;
  std::string gpu;
  std::string nvlink_file;
  std::optional<double> nic_GBps;
  std::vector<std::string> catalog_files;
  bool json = false;
};

nlohmann::json to_json(const TopologyReport& r) {
  using nlohmann::json;
  const Topology& t = r.topology;
  json gpus = json::array();
  for (const auto& g : t.gpus) {
    json j;
    j["index"] = g.index;
    j["name"] = g.name.empty() ? json(nullptr) : json(g.name);
    j["numa_node"] = g.numa_node ? json(*g.numa_node) : json(nullptr);
    j["cpu_affinity"] = g.cpu_affinity.empty() ? json(nullptr) : json(g.cpu_affinity);
    j["gpu_numa_id"] = g.gpu_numa_id ? json(*g.gpu_numa_id) : json(nullptr);
    if (!g.pci_bus_id.empty()) j["pci_bus_id"] = g.pci_bus_id;
    const int nic = r.nearest_nic[g.index];
    j["nearest_nic"] = nic >= 0 ? json(t.nics[nic].name) : json(nullptr);
    gpus.push_back(j);
  }
  json nics = json::array();
  for (std::size_t c = 0; c < t.nics.size(); ++c) {
    nics.push_back({{"label", t.nics[c].label},
                    {"name", t.nics[c].name},
                    {"gpu_codes", t.nics[c].gpu_codes},
                    {"nearest_gpus", r.nic_nearest_gpus[c]}});
  }
  json out;
  out["format"] = t.format;
  out["gpus"] = gpus;
  out["nics"] = nics;
  out["links"] = t.links;
  out["bandwidth_GBps"] = r.bandwidth_GBps;
  out["nvlink_domains"] = r.nvlink_domains;
  out["all_to_all_groups"] = r.all_to_all_groups;
  out["max_tp_in_domain"] = r.max_tp_in_domain;
  out["gpu"] = r.rates ? json(r.rates->gpu) : json(nullptr);
  out["generation"] = r.rates ? json(r.rates->generation) : json(nullptr);
  out["generation_reason"] = r.rates_reason;
  out["nvlink_per_link_GBps"] = r.rates ? json(r.rates->nvlink_per_link_GBps) : json(nullptr);
  out["rates_source"] = r.rates ? json(r.rates->source) : json(nullptr);
  out["fastest_gpu_GBps"] = r.fastest_gpu_GBps;
  out["nic_GBps"] = r.nic_GBps;
  out["nic_GBps_reason"] = r.nic_reason;
  out["compute_nics"] = r.compute_nics;
  out["warnings"] = r.warnings;
  out["advice"] = r.advice;
  return out;
}

std::string domains_text(const std::vector<std::vector<int>>& ds) {
  std::string s;
  for (const auto& d : ds) s += (s.empty() ? "" : "  ") + fmt::format("[{}]", format_gpu_set(d));
  return s;
}

void print_text(const TopologyReport& r) {
  const Topology& t = r.topology;
  const std::size_t n = t.gpus.size();
  fmt::print("Topology from {}: {} GPU{}, {} NIC{}\n", t.format, n, n == 1 ? "" : "s", t.nics.size(),
             t.nics.size() == 1 ? "" : "s");
  fmt::print("Generation: {} ({})\n", r.rates ? r.rates->generation : std::string("unknown"), r.rates_reason);
  if (r.rates) fmt::print("Rates from {}\n", r.rates->source);
  fmt::print("\n");
  fmt::print("Links (code / GB/s per direction):\n{:>8}", "");
  for (std::size_t j = 0; j < n; ++j) fmt::print("{:>12}", fmt::format("GPU{}", j));
  fmt::print("\n");
  for (std::size_t i = 0; i < n; ++i) {
    fmt::print("{:>8}", fmt::format("GPU{}", i));
    for (std::size_t j = 0; j < n; ++j) {
      fmt::print("{:>12}", i == j ? std::string("X") : fmt::format("{} {:.4g}", t.links[i][j], r.bandwidth_GBps[i][j]));
    }
    fmt::print("\n");
  }
  fmt::print("\nNVLink domains: {}\n", domains_text(r.nvlink_domains));
  fmt::print("All-to-all groups: {}   (largest tensor/expert-parallel size inside one: {})\n",
             domains_text(r.all_to_all_groups), r.max_tp_in_domain);
  fmt::print("\nGPU   NUMA  CPU affinity        nearest NIC\n");
  for (const auto& g : t.gpus) {
    const int nic = r.nearest_nic[g.index];
    fmt::print("GPU{:<3}{:<6}{:<20}{}\n", g.index, g.numa_node ? std::to_string(*g.numa_node) : std::string("-"),
               g.cpu_affinity.empty() ? std::string("-") : g.cpu_affinity,
               nic >= 0 ? fmt::format("{} ({})", t.nics[nic].name, t.nics[nic].gpu_codes[g.index]) : std::string("-"));
  }
  if (!t.nics.empty()) {
    fmt::print("\nNIC          nearest GPUs\n");
    for (std::size_t c = 0; c < t.nics.size(); ++c) {
      fmt::print("{:<13}{}\n", t.nics[c].name,
                 r.nic_nearest_gpus[c].empty() ? std::string("- (far from every GPU: storage/management?)")
                                               : format_gpu_set(r.nic_nearest_gpus[c]));
    }
  }
  fmt::print("\nAdvice:\n");
  for (const auto& a : r.advice) fmt::print("  - {}\n", a);
  if (!r.warnings.empty()) {
    fmt::print("\nWarnings:\n");
    for (const auto& w : r.warnings) fmt::print("  - {}\n", w);
  }
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto args = std::make_shared<TopoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "topo", "Reads `nvidia-smi topo -m` (or rocm-smi --showtopo / amd-smi topology) and prints the link matrix, "
              "NVLink domains, GPU-NIC pairing and placement advice. Without FILE, asks the NVIDIA driver (NVML).");
  cmd->add_option("file", args->file, "topology output to read; - for standard input");
  cmd->add_option("--gpu", args->gpu,
                  "GPU catalog name (h100-sxm-80gb, a100-sxm-80gb, v100-sxm-32gb, b200, mi300x, ...; see 'gpuplan "
                  "catalog gpus') or device name: fixes per-link rates");
  cmd->add_option("--nvlink", args->nvlink_file, "`nvidia-smi nvlink -s` output: link counts, rates, inactive links");
  cmd->add_option("--nic-GBps", args->nic_GBps, "bandwidth of one NIC, GB/s per direction (400 Gb/s = 50)");
  cmd->add_option("--catalog", args->catalog_files, "Hardware catalog JSON adding or overriding entries (repeatable)")
      ->type_name("FILE");
  cmd->add_flag("--json", args->json, "print JSON instead of text");
  cmd->callback([args]() {
    HardwareCatalog catalog = HardwareCatalog::builtin();
    for (const auto& f : args->catalog_files) catalog.merge_json(read_text_file(f, "--catalog"), f);
    Topology topo = args->file.empty() ? discover_topology_nvml() : parse_topology(read_text_file(args->file, "topo FILE"));
    TopologyOptions opt;
    opt.catalog = &catalog;
    opt.gpu_name = args->gpu;
    opt.nic_GBps = args->nic_GBps;
    if (!args->nvlink_file.empty()) opt.nvlink_status = parse_nvlink_status(read_text_file(args->nvlink_file, "--nvlink"));
    const TopologyReport rep = analyze_topology(topo, opt);
    if (args->json) fmt::print("{}\n", to_json(rep).dump(2));
    else print_text(rep);
  });
}

}  // namespace gpuplan::cli
