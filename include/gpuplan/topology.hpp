#pragma once
// Intra-node interconnect topology: what `nvidia-smi topo -m`, `nvidia-smi nvlink -s`, `rocm-smi --showtopo` and
// `amd-smi topology` print, read into plain data, and the pure functions that turn it into per-pair bandwidths,
// NVLink domains, GPU-NIC pairing and placement advice. Everything here takes text and returns values; the live
// discovery through the NVIDIA driver is gpuplan_host's (gpuplan/host.hpp). See docs/topology.md.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan {

class HardwareCatalog;
struct GpuSpec;

// ---------------------------------------------------------------------------------------------------------------
// Connection codes

// Path classes, best first. `pcie` is AMD's PCIE link type (no finer level printed); `sys` also covers the old SOC.
enum class PathType { self, nvlink, xgmi, pix, pxb, phb, node, sys, pcie, unknown };

struct PathCode {
  PathType type = PathType::unknown;
  int links = 0;  // NV#: number of bonded NVLinks; 1 for a direct xGMI link; 0 otherwise
};

// Classifies a code as printed ("X", "NV12", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "XGMI", "PCIE", "SELF").
// Returns PathType::unknown for anything else (including "?" for a pair the input did not give).
PathCode classify_code(std::string_view code);

// Rank of a path class for "nearest" decisions: lower is closer (self 0 ... unknown last).
int path_rank(PathType type);

// Whether a GPU-NIC path keeps GPUDirect RDMA off the CPU socket interconnect: any path better than SYS (PIX, PXB,
// PHB, NODE). SYS, SOC and unknown paths are far. The one rule behind "near" in the NIC table, the GPU-NIC
// pairing warnings and the NIC count of the network advice.
bool is_near_nic_path(std::string_view code);

// "PCIe through the CPU (SYS)" and the like, for messages.
std::string describe_path(std::string_view code);

// ---------------------------------------------------------------------------------------------------------------
// Parsed topology (what the tools print, nothing inferred)

struct TopoGpu {
  int index = 0;
  std::string name;                   // "NVIDIA H800" when the input names it, else ""
  std::string pci_bus_id;             // amd-smi / NVML only, else ""
  // The node of the GPU's CPUs: the first node of "NUMA Affinity" (nvidia-smi) or "Numa Node" (rocm-smi); nullopt
  // if N/A. Grace systems list the CPU's node first, then the GPU memory nodes ("0,3-9,11-17"): binding threads
  // wants the first.
  std::optional<int> numa_node;
  std::vector<int> numa_affinity;     // every node listed, ascending ({0, 3, 4, ..., 17}); empty if absent or N/A
  std::string cpu_affinity;           // as printed ("0-47,96-143"); "" when absent, blank, N/A or malformed
  std::optional<int> gpu_numa_id;     // "GPU NUMA ID" (Grace systems); nullopt if absent or N/A
};

struct TopoNic {
  std::string label;                  // the matrix label: "NIC0" or "mlx5_0"
  std::string name;                   // device name from the NIC Legend ("mlx5_0"); == label when named directly
  std::vector<std::string> gpu_codes; // code to each GPU, "?" where the input does not say
};

struct Topology {
  std::string format;                 // "nvidia-smi topo -m", "rocm-smi --showtopo", "amd-smi topology", "nvml"
  std::vector<TopoGpu> gpus;
  std::vector<TopoNic> nics;
  std::vector<std::vector<std::string>> links;  // GPU x GPU codes as printed, "X" on the diagonal, "?" if unknown
  // amd-smi "NUMA BW TABLE": maximum of the min-max figure, in GB/s (MB/s / 1000); empty when not given.
  std::vector<std::vector<double>> reported_bandwidth_GBps;
  std::vector<std::string> warnings;  // what the input lacked or what looked wrong (clipped copy, asymmetry, ...)
};

// `nvidia-smi topo -m`. Leading lines starting with '#' (and shell prompt lines) are skipped; tabs or runs of
// spaces separate cells; ANSI escapes are ignored; the matrix stops at "Legend:". Throws InputError for text that
// is not such an output, a non-square matrix, a wrong diagonal or an unknown code (naming row and column).
Topology parse_nvidia_smi_topo(std::string_view text);

// `rocm-smi --showtopo` ("Link Type between two GPUs" table, plus the Numa Nodes section when present).
Topology parse_rocm_smi_topo(std::string_view text);

// `amd-smi topology` (LINK TYPE TABLE keyed by PCI BDF, NUMA BW TABLE when present).
Topology parse_amd_smi_topology(std::string_view text);

// Any of the three above, recognised from the text.
Topology parse_topology(std::string_view text);

// ---------------------------------------------------------------------------------------------------------------
// `nvidia-smi nvlink -s` / `--status`

struct NvlinkGpuStatus {
  int gpu = 0;
  std::string name;                   // "NVIDIA H800"
  int links_listed = 0;               // Link lines printed for this GPU
  int links_active = 0;               // those with a rate
  std::vector<int> inactive_links;    // link numbers printed as <inactive>
  double per_link_GBps = 0;           // rate printed for the active links (largest if they differ); 0 if none
};

struct NvlinkStatus {
  std::vector<NvlinkGpuStatus> gpus;  // in the order printed
  std::vector<std::string> warnings;  // gaps in GPU numbering (elided output), differing rates
  const NvlinkGpuStatus* find(int gpu) const;
};

// Throws InputError when no "GPU <i>: <name>" line followed by "Link <n>: ..." lines is found.
NvlinkStatus parse_nvlink_status(std::string_view text);

// ---------------------------------------------------------------------------------------------------------------
// Link rates (per direction, GB/s), taken from the hardware catalog (include/gpuplan/hardware.hpp,
// data/hardware/*.json), where each figure carries its source. See src/topology/link_rates.cpp.
//
// Every function below takes the catalog to read; nullptr means the built-in one (HardwareCatalog::builtin()).

struct GpuLinkRates {
  std::string gpu;                    // catalog GPU name: "h100-sxm-80gb"
  std::string generation;             // "Hopper (NVLink 4)", "AMD CDNA3 (xGMI)"
  std::string nvlink_link;            // catalog link of the GPU's NVLink/xGMI: "nvlink4"; "" when it has none
  double nvlink_per_link_GBps = 0;    // that link's nominal data rate, one direction (links.*.per_direction_GBps)
  int nvlinks_per_gpu = 0;            // gpus.*.scaleup_links
  std::string pcie_link;              // the GPU's host link: "pcie5-x16" (or "nvlink-c2c" on Grace superchips)
  double pcie_GBps = 0;               // that link, one direction
  std::string nic_link;               // usual compute NIC of the generation's systems: "ib-ndr"; "" when no rule
  double nic_GBps = 0;                // that link, one direction
  std::string nic_name;               // its catalog description: "InfiniBand NDR 4x, 400 Gb/s (ConnectX-7)"
  std::string source;                 // the catalog entries used ("gpus.h100-sxm-80gb, links.nvlink4, ...")
};

// The rates of one catalog GPU: its scale-up link, host link and the default NIC of its architecture (the rule
// in default_nic_link). Links the catalog lacks leave their figures at 0.
GpuLinkRates link_rates_for_catalog_gpu(const GpuSpec& gpu, const HardwareCatalog& catalog);

// The catalog link name of the usual compute NIC for an architecture ("hopper" -> "ib-ndr"); "" when none.
// A documented rule (docs/topology.md); the rate itself comes from the catalog's link entry.
std::string_view default_nic_link(std::string_view architecture);

// By a catalog name ("h100-sxm-80gb", "rtx-3090") or a device name the driver reports ("NVIDIA H800",
// "Tesla V100-SXM2-32GB"), case-insensitive; nullopt if the catalog has neither.
std::optional<GpuLinkRates> link_rates_for_gpu(std::string_view gpu_name, const HardwareCatalog* catalog = nullptr);

// By the per-link figure `nvidia-smi nvlink -s` prints (25.781 -> NVLink 2, 26.562 -> NVLink 4, ...), through
// HardwareCatalog::nvlink_by_reported_rate. The GPU is the link's flagship: one whose scaleup_links equals the
// link's typical_links_per_gpu, SXM first, then by name (26.562 -> h100-sxm-80gb; callers use the link counts
// actually seen). nullopt when no link or no GPU matches.
std::optional<GpuLinkRates> link_rates_for_smi_rate(double printed_GBps, const HardwareCatalog* catalog = nullptr);

// ---------------------------------------------------------------------------------------------------------------
// Analysis

struct TopologyOptions {
  const HardwareCatalog* catalog = nullptr;   // rates come from here; nullptr: HardwareCatalog::builtin()
  std::string gpu_name;                       // --gpu: a catalog or device name, fixes the rates; "" to infer
  std::optional<double> nic_GBps;             // --nic-GBps: per NIC, one direction
  std::optional<NvlinkStatus> nvlink_status;  // refines NVLink rates and removes inactive links
};

struct TopologyReport {
  Topology topology;
  std::optional<GpuLinkRates> rates;          // nullopt when the generation could not be inferred
  std::string rates_reason;                   // how the rates were chosen ("--gpu h100-sxm-80gb", "inferred from
                                              // NV18", ...)
  std::vector<std::vector<double>> bandwidth_GBps;  // GPU x GPU, per direction, 0 on the diagonal
  std::vector<std::vector<int>> nvlink_domains;     // connected components of the NVLink (or xGMI) graph
  std::vector<std::vector<int>> all_to_all_groups;  // largest groups with a direct fast link between every pair,
                                                    // one per domain
  std::vector<int> nearest_nic;               // per GPU: index into topology.nics, -1 when none
  std::vector<std::vector<int>> nic_nearest_gpus;   // per NIC: the GPUs closest to it, when that path is near
                                                    // (is_near_nic_path); empty for a NIC far from every GPU
  int compute_nics = 0;                       // NICs that are the nearest NIC of at least one GPU over a near path
  double fastest_gpu_GBps = 0;                // best GPU-GPU pair bandwidth
  double nic_GBps = 0;                        // per NIC, one direction (option, else a catalog link)
  std::string nic_reason;
  int max_tp_in_domain = 1;                   // largest power of two <= the largest all-to-all group
  std::vector<std::string> advice;
  std::vector<std::string> warnings;          // parse warnings plus those of the analysis

  // What the analysis used and found on the way. The advice is derived from the report alone, so everything it
  // needs is kept here.
  double nvlink_per_link_GBps = 0;            // one NVLink (or xGMI link), one direction, as used for the pairs:
                                              // the rates' scale-up link, else NCCL's model rate of links.nvlink3
  double pcie_GBps = 0;                       // a PCIe path, one direction, as used for pairs without a fast link:
                                              // the rates' host link, else links.pcie4-x16 (0 for a single GPU
                                              // whose rates give none)
  std::vector<std::vector<bool>> fast_link;   // GPU x GPU: row i's code to GPU j is an xGMI link or an NVLink with
                                              // bandwidth left after inactive links; false on the diagonal. Follows
                                              // the rows as printed, so it is asymmetric where the matrix is
  int max_nvlinks_per_pair = 0;               // largest NV# in the matrix (bonded NVLinks of one pair); 0 if none
  int min_nvlinks_per_pair = 0;               // smallest NV# in the matrix; 0 if none
  bool has_xgmi = false;                      // the matrix has xGMI codes: messages call the fast links xGMI
};

// Pure: computes the report from a parsed topology and the catalog. Throws InputError for a --gpu name the catalog
// lacks (with the closest names) or a non-positive --nic-GBps.
TopologyReport analyze_topology(const Topology& topology, const TopologyOptions& options = {});

// Connected components of the GPUs joined by NVLink or xGMI codes; a GPU without such a link is its own domain.
// Sorted by smallest GPU index.
std::vector<std::vector<int>> nvlink_domains(const Topology& topology);

// "0-3", "0,2,5-7": ids sorted, duplicates dropped, runs of three or more as ranges.
std::string format_id_list(const std::vector<int>& ids);

// format_id_list of GPU indices.
std::string format_gpu_set(const std::vector<int>& gpus);

}  // namespace gpuplan
