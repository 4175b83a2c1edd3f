// Per-GPU link rates for the topology analysis, read from the hardware catalog (data/hardware/*.json, where every
// figure carries its source). Nothing here holds a bandwidth: only the rule naming the usual NIC link of an
// architecture. All rates are per direction, GB/s (1 GB = 1e9 bytes).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "catalog_ref.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan {

namespace {

std::string display_architecture(std::string_view arch) {
  std::string out(arch);
  if (out.rfind("cdna", 0) == 0) {
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return "AMD " + out;
  }
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string link_label(const GpuSpec& gpu, const LinkSpec* link) {
  if (link == nullptr) return gpu.vendor == "amd" ? "no xGMI" : "no NVLink";
  switch (link->kind) {
    case LinkKind::nvlink:
      return fmt::format("NVLink {}{}", link->generation,
                         link->name.find("bridge") != std::string::npos ? " bridge" : "");
    case LinkKind::xgmi: return "xGMI";
    default: return std::string(to_string(link->kind));
  }
}

}  // namespace

namespace detail {

const HardwareCatalog& topology_catalog(const HardwareCatalog* catalog) {
  if (catalog != nullptr) return *catalog;
  static const HardwareCatalog builtin = HardwareCatalog::builtin();
  return builtin;
}

}  // namespace detail

std::string_view default_nic_link(std::string_view architecture) {
  // The compute NIC of each generation's reference systems (DGX-1: EDR; DGX A100: HDR; DGX H100/B200: NDR;
  // MI300X platforms: 400 Gb/s), applied to every GPU of that architecture. Rates: the catalog's link entries.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> rule = {{
      {"pascal", "ib-edr"},
      {"volta", "ib-edr"},
      {"ampere", "ib-hdr"},
      {"ada", "ib-hdr"},
      {"cdna2", "ib-hdr"},
      {"hopper", "ib-ndr"},
      {"blackwell", "ib-ndr"},
      {"cdna3", "ib-ndr"},
      {"cdna4", "ib-ndr"},
  }};
  for (const auto& [arch, link] : rule) {
    if (arch == architecture) return link;
  }
  return {};
}

GpuLinkRates link_rates_for_catalog_gpu(const GpuSpec& gpu, const HardwareCatalog& catalog) {
  GpuLinkRates r;
  r.gpu = gpu.name;
  std::string source = "catalog gpus." + gpu.name;
  const LinkSpec* scaleup = gpu.scaleup_link.empty() ? nullptr : catalog.find_link(gpu.scaleup_link);
  if (scaleup != nullptr) {
    r.nvlink_link = scaleup->name;
    r.nvlink_per_link_GBps = scaleup->per_direction_GBps;
    r.nvlinks_per_gpu = gpu.scaleup_links;
    source += ", links." + scaleup->name;
  }
  r.generation = fmt::format("{} ({})", display_architecture(gpu.architecture), link_label(gpu, scaleup));
  if (const LinkSpec* host = gpu.host_link.empty() ? nullptr : catalog.find_link(gpu.host_link)) {
    r.pcie_link = host->name;
    r.pcie_GBps = host->per_direction_GBps;
    source += ", links." + host->name;
  }
  const std::string_view nic = default_nic_link(gpu.architecture);
  if (const LinkSpec* l = nic.empty() ? nullptr : catalog.find_link(nic)) {
    r.nic_link = l->name;
    r.nic_GBps = l->per_direction_GBps;
    r.nic_name = l->description;
    source += ", links." + l->name + " (default NIC of " + gpu.architecture + " systems)";
  }
  r.source = source;
  return r;
}

std::optional<GpuLinkRates> link_rates_for_gpu(std::string_view gpu_name, const HardwareCatalog* catalog) {
  const HardwareCatalog& c = detail::topology_catalog(catalog);
  std::string_view name = gpu_name;
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
  if (name.empty()) return std::nullopt;
  const GpuSpec* g = c.find_gpu(name);
  if (g == nullptr) g = c.gpu_by_device_name(name);
  if (g == nullptr) return std::nullopt;
  return link_rates_for_catalog_gpu(*g, c);
}

std::optional<GpuLinkRates> link_rates_for_smi_rate(double printed_GBps, const HardwareCatalog* catalog) {
  const HardwareCatalog& c = detail::topology_catalog(catalog);
  const LinkSpec* link = c.nvlink_by_reported_rate(printed_GBps);
  if (link == nullptr) return std::nullopt;
  const GpuSpec* best = nullptr;
  auto key = [&](const GpuSpec& g) {
    // Lower is better: the link's flagship link count, then SXM; the map is already in name order.
    return (g.scaleup_links == link->typical_links_per_gpu ? 0 : 2) + (g.form_factor == "sxm" ? 0 : 1);
  };
  for (const auto& [name, g] : c.gpus()) {
    if (g.scaleup_link != link->name) continue;
    if (best == nullptr || key(g) < key(*best)) best = &g;
  }
  if (best == nullptr) return std::nullopt;
  return link_rates_for_catalog_gpu(*best, c);
}

}  // namespace gpuplan
