// Per-link rates by GPU generation. A small table until the hardware catalog (include/gpuplan/hardware.hpp)
// replaces it; every figure carries its source. All rates are per direction, GB/s (1 GB = 1e9 bytes).
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>

#include "gpuplan/topology.hpp"

namespace gpuplan {

namespace {

// PCIe x16, one direction (PCI-SIG: 8/16/32 GT/s per lane, 128b/130b): 15.75 / 31.5 / 63 GB/s.
constexpr double kPcieGen3 = 15.75;
constexpr double kPcieGen4 = 31.5;
constexpr double kPcieGen5 = 63.0;
// InfiniBand 4x, one direction: EDR 100, HDR 200, NDR 400 Gb/s (IBTA) = 12.5 / 25 / 50 GB/s.
constexpr double kEdr = 12.5;
constexpr double kHdr = 25.0;
constexpr double kNdr = 50.0;

struct Entry {
  const char* patterns;      // lower-case substrings of a GPU name, '|' separated
  double smi_rate_GBps;      // per-link figure `nvidia-smi nvlink -s` prints (0: none)
  GpuLinkRates rates;
};

const std::array<Entry, 10>& table() {
  static const std::array<Entry, 10> t = {{
      {"p100", 0,
       {"Pascal (NVLink 1)", 20.0, 4, kPcieGen3, kEdr, "EDR 100 Gb/s",
        "NVIDIA Tesla P100 datasheet: 4 NVLinks, 160 GB/s bidirectional (20 GB/s per link per direction); "
        "NCCL src/graph/topo.h SM60_NVLINK_BW 18"}},
      {"v100", 25.781,
       {"Volta (NVLink 2)", 25.0, 6, kPcieGen3, kEdr, "EDR 100 Gb/s",
        "NVIDIA Tesla V100 datasheet: 6 NVLinks, 300 GB/s bidirectional (25 GB/s per link per direction); "
        "nvidia-smi nvlink -s prints 25.781"}},
      {"a100|a800", 25.0,
       {"Ampere (NVLink 3)", 25.0, 12, kPcieGen4, kHdr, "HDR 200 Gb/s",
        "NVIDIA A100 datasheet: 12 NVLinks, 600 GB/s bidirectional (25 GB/s per link per direction); DGX A100 "
        "user guide: 8x HDR 200 Gb/s compute NICs"}},
      {"3090|a6000|a40", 14.062,
       {"Ampere (NVLink 3 bridge)", 14.0625, 4, kPcieGen4, kHdr, "HDR 200 Gb/s",
        "NVIDIA RTX A6000 / GeForce RTX 3090 specs: NVLink bridge 112.5 GB/s bidirectional over 4 links "
        "(14.0625 GB/s per link per direction); nvidia-smi nvlink -s prints 14.062"}},
      {"h800", 26.562,
       {"Hopper (NVLink 4, export)", 25.0, 8, kPcieGen5, kNdr, "NDR 400 Gb/s",
        "NVIDIA H800 SXM specs: 400 GB/s NVLink bidirectional = 8 NVLink 4 links of 25 GB/s per direction"}},
      {"h100|h200|h20|gh200", 26.562,
       {"Hopper (NVLink 4)", 25.0, 18, kPcieGen5, kNdr, "NDR 400 Gb/s",
        "NVIDIA H100 datasheet: 18 NVLinks, 900 GB/s bidirectional (25 GB/s per link per direction); DGX H100 "
        "user guide: 8x ConnectX-7 400 Gb/s"}},
      {"b200|b300|gb200|gb300|b100", 53.125,
       {"Blackwell (NVLink 5)", 50.0, 18, kPcieGen5, kNdr, "NDR 400 Gb/s",
        "NVIDIA DGX B200 user guide: 18 NVLink 5 links, 1.8 TB/s bidirectional (50 GB/s per link per direction), "
        "8x ConnectX-7 400 Gb/s"}},
      {"mi300|mi325|mi355", 0,
       {"AMD CDNA3 (xGMI)", 64.0, 7, kPcieGen5, kNdr, "NDR 400 Gb/s",
        "AMD Instinct MI300X data sheet / ROCm blog: 7 xGMI links per GPU, 64 GB/s per link per direction "
        "(about 48 GB/s usable)"}},
      {"mi250|mi210", 0,
       {"AMD CDNA2 (xGMI)", 50.0, 8, kPcieGen4, kHdr, "HDR 200 Gb/s",
        "AMD Instinct MI250X data sheet: up to 8 Infinity Fabric links, 100 GB/s bidirectional each"}},
      {"l40|l4|4090|6000 ada", 0,
       {"Ada (no NVLink)", 0.0, 0, kPcieGen4, kHdr, "HDR 200 Gb/s", "NVIDIA L40S / RTX 4090 specs: no NVLink, PCIe 4.0 x16"}},
  }};
  return t;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool matches(std::string_view name_lower, std::string_view patterns) {
  std::size_t start = 0;
  while (start <= patterns.size()) {
    auto end = patterns.find('|', start);
    if (end == std::string_view::npos) end = patterns.size();
    const std::string_view p = patterns.substr(start, end - start);
    // Word-ish match: "h20" must not match "h200" by accident, so require a non-digit after the pattern.
    for (std::size_t at = name_lower.find(p); at != std::string_view::npos; at = name_lower.find(p, at + 1)) {
      const std::size_t after = at + p.size();
      if (after >= name_lower.size() || !std::isdigit(static_cast<unsigned char>(name_lower[after]))) return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

std::optional<GpuLinkRates> link_rates_for_gpu(std::string_view gpu_name) {
  const std::string n = lower(gpu_name);
  if (n.empty()) return std::nullopt;
  for (const auto& e : table()) {
    if (matches(n, e.patterns)) return e.rates;
  }
  return std::nullopt;
}

std::optional<GpuLinkRates> link_rates_for_smi_rate(double printed_GBps) {
  // Within 1% of the figure nvidia-smi prints. 26.562 is shared by H100/H200/H20/H800: the H100 entry (18 links)
  // is returned and callers use the link counts actually seen. 25.0 is A100.
  for (const auto& e : table()) {
    if (e.smi_rate_GBps > 0 && std::fabs(printed_GBps - e.smi_rate_GBps) <= 0.01 * e.smi_rate_GBps) {
      if (std::string_view(e.patterns) == "h800") continue;
      return e.rates;
    }
  }
  return std::nullopt;
}

}  // namespace gpuplan
