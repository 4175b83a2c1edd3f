#pragma once
// The hardware catalog: GPUs, links (PCIe, NVLink, NVSwitch, xGMI, InfiniBand, Ethernet), systems (DGX, HGX,
// PCIe servers, GB200 NVL72, MI300X platforms) and clusters built from them. The built-in entries live in
// data/hardware/*.json, each value with its source; a user file of the same schema adds or overrides entries
// (docs/hardware.md). No file I/O here: callers read files and pass their text.
//
// Bandwidths are in GB/s (1 GB = 1e9 bytes) and always say their direction: *_per_direction_GBps is one way,
// *_bidirectional_GBps is both ways together. Latencies are in microseconds (*_us).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/units.hpp"

namespace gpuplan {

// ---------------------------------------------------------------------------------------------------------------
// Links

enum class LinkKind { pcie, nvlink, nvswitch, xgmi, c2c, infiniband, ethernet };
std::string_view to_string(LinkKind kind);                       // "pcie", "nvlink", ...

struct LinkSpec {
  std::string name;                      // catalog name: "pcie5-x16", "nvlink4", "nvswitch3", "ib-ndr", "eth-400g"
  LinkKind kind = LinkKind::pcie;
  std::string description;               // "PCIe 5.0 x16", "NVLink 4 (Hopper), one link"
  int generation = 0;                    // PCIe/NVLink/NVSwitch/xGMI generation; 0 where it does not apply
  double per_direction_GBps = 0;         // one link (or port, or x16 slot), one way
  double bidirectional_GBps = 0;         // the same, both ways together (2 x per_direction for full duplex)
  double latency_us = 0;                 // one-hop small-message latency (see the entry's sources for its meaning)
  int typical_links_per_gpu = 0;         // NVLink/xGMI: links of the flagship GPU of the generation; 0 otherwise
  int ports = 0;                         // NVSwitch: NVLink ports per switch chip; 0 otherwise
  std::string port_link;                 // NVSwitch: the link its ports speak ("nvlink4"); "" otherwise
  double reported_rate_GBps = 0;         // NVLink: the per-link rate `nvidia-smi nvlink -s` prints; 0 if none
  double nccl_model_GBps = 0;            // the rate NCCL's topology graph assigns (src/graph/topo.h); 0 if none
  std::string source;                    // where the values come from (required, non-empty)
  std::map<std::string, std::string> field_sources;   // per-field sources/notes, keyed by field name
  std::string origin;                    // file the entry was last defined in ("builtin:hardware/links.json")

  // NVLink/xGMI: typical_links_per_gpu x per-link rate.
  double typical_per_gpu_per_direction_GBps() const { return typical_links_per_gpu * per_direction_GBps; }
  double typical_per_gpu_bidirectional_GBps() const { return typical_links_per_gpu * bidirectional_GBps; }
};

// ---------------------------------------------------------------------------------------------------------------
// GPUs

struct GpuSpec {
  std::string name;                      // catalog name: "h100-sxm-80gb", "mi300x"
  std::string vendor;                    // "nvidia", "amd"
  std::string description;               // "NVIDIA H100 SXM5 80GB"
  std::vector<std::string> device_names; // names the driver reports ("NVIDIA H100 80GB HBM3"), for detection
  std::string architecture;              // "volta", "ampere", "hopper", "blackwell", "ada", "cdna3", ...
  std::string compute_arch;              // "sm90", "sm100", "gfx942": selects NCCL/RCCL tuning later
  int sm_version = 0;                    // 70, 80, 86, 89, 90, 100, 103, 120; 0 for AMD
  std::string form_factor;               // "sxm", "pcie", "oam", "superchip"
  std::string memory_type;               // "HBM3", "GDDR6X", ...
  double marketed_memory_GB = 0;         // the capacity in the product name/datasheet ("80GB"): a label
  bytes_t usable_memory_bytes = 0;       // total the driver reports (nvidia-smi / torch total_memory)
  double memory_GBps = 0;                // peak device-memory bandwidth
  std::map<std::string, double, std::less<>> dense_tflops;   // dense peak per dtype: "fp64", "fp32", "tf32",
                                                             // "bf16", "fp16", "fp8", "fp4" (only those that exist)
  std::string scaleup_link;              // "nvlink4", "xgmi3", "" when the GPU has none
  int scaleup_links = 0;                 // links the GPU has of that kind
  double scaleup_per_direction_GBps = 0; // derived: scaleup_links x the link's per-direction rate
  double scaleup_bidirectional_GBps = 0; // derived: scaleup_links x the link's bidirectional rate
  std::string host_link;                 // link to the host: "pcie5-x16", "c2c-grace"
  double host_per_direction_GBps = 0;    // derived from host_link
  double board_power_W = 0;              // maximum board power (TDP); 0 when not stated
  // The highest MFU a published training run reached on this GPU, counting causal attention's FLOPs (what the
  // kernels computed, so that runs of any sequence length compare); 0 when none is known. A prediction above it
  // carries a warning. Its source is field_sources' entry.
  double best_published_mfu_causal = 0;
  std::string source;                    // main source (required, non-empty)
  std::map<std::string, std::string> field_sources;   // per-field sources/notes, keyed by field name
  std::string origin;

  // Dense peak for a dtype ("bf16", "fp8", ...). Throws InputError naming the dtypes this GPU has.
  double tflops(std::string_view dtype) const;
  bool has_dtype(std::string_view dtype) const { return dense_tflops.find(dtype) != dense_tflops.end(); }
  // Whether its fp8 GEMMs take operands in any layout (sm 10.x and 13+); Hopper, Ada and sm 12.x take only TN, so
  // Transformer Engine keeps a transposed fp8 copy beside each fp8 weight (pytorch/utils.py,
  // is_non_tn_fp8_gemm_supported).
  bool fp8_gemm_any_layout() const { return (sm_version >= 100 && sm_version < 120) || sm_version >= 130; }
};

// ---------------------------------------------------------------------------------------------------------------
// Systems (one node, or for GB200 NVL72 one rack: whatever `--nodes` counts)

enum class ScaleUpTopology {
  none,              // GPUs talk over PCIe only
  nvswitch,          // every GPU reaches every other at full per-GPU rate through switches
  full_mesh,         // a direct link (or bundle) between every pair (MI300X xGMI)
  hybrid_cube_mesh,  // DGX-1: 1 or 2 NVLinks between some pairs, none between others (see link_matrix)
  pairs,             // NVLink bridges join GPU 2k and 2k+1
};
std::string_view to_string(ScaleUpTopology topology);            // "none", "nvswitch", "full-mesh", ...

struct ScaleUpDomain {
  ScaleUpTopology topology = ScaleUpTopology::none;
  std::string link;                      // link of one GPU's connections ("nvlink4"); "" for none
  int domain_gpus = 1;                   // GPUs that share one scale-up domain (8, 72; 2 for pairs)
  int links_per_gpu = 0;                 // links each GPU has into the domain
  std::string switch_name;               // "nvswitch3" when topology == nvswitch
  int switches = 0;                      // switch chips per node (per rack for NVL72)
  std::vector<std::vector<int>> link_matrix;   // hybrid_cube_mesh: links between GPU i and j (node-local index)
  double per_gpu_per_direction_GBps = 0; // derived: links_per_gpu x link rate
  double per_gpu_bidirectional_GBps = 0; // derived
  double link_per_direction_GBps = 0;    // derived: one link's rate
};

struct SystemSpec {
  std::string name;                      // "dgx-h100", "gb200-nvl72", "pcie-8x-l40s"
  std::string description;
  std::string gpu;                       // GPU catalog name
  int gpus_per_node = 0;
  int hosts_per_node = 1;                // operating-system hosts in one node (18 compute trays in an NVL72)
  ScaleUpDomain scaleup;
  int nics_per_node = 0;                 // compute (east-west) NICs
  std::string nic_link;                  // "ib-ndr", "eth-400g"
  double nic_per_direction_GBps = 0;     // derived: one NIC
  int storage_nics = 0;                  // extra NICs for storage / in-band management, not used for training
  bytes_t host_memory_bytes = 0;         // CPU memory of the node
  std::string cpu;                       // "2x Intel Xeon Platinum 8480C"
  std::string host_link;                 // link from each GPU to the host ("pcie5-x16")
  int gpus_per_host_link = 1;            // GPUs sharing one such link (DGX-1: 2 per PCIe switch uplink)
  double host_per_direction_GBps = 0;    // derived: host link rate / gpus_per_host_link (per GPU)
  double nvme_read_GBps = 0;             // local NVMe aggregate sequential read; 0 when not stated
  double nvme_write_GBps = 0;            // local NVMe aggregate sequential write; 0 when not stated
  int nvme_drives = 0;                   // local NVMe drives the rates add up over; 0 when not stated
  bytes_t nvme_bytes = 0;                // local NVMe capacity; 0 when not stated
  double power_W = 0;                    // maximum input power of one node (datasheet); 0 when not stated
  // The scale-out network's tiers in the reference cluster of this system: nodes one leaf (rail) group joins,
  // nodes a two-tier (leaf-spine) fabric joins, and how oversubscribed the tiers above the leaves are.
  int leaf_nodes = 0;                    // 0 when not stated
  int spine_nodes = 0;                   // 0 when not stated
  double spine_oversubscription = 1;     // 1: non-blocking
  std::string source;
  std::map<std::string, std::string> field_sources;
  std::string origin;

  // Per-direction NVLink/xGMI bandwidth between node-local GPUs i and j; 0 when they have no direct path
  // (they fall back to PCIe/host). i == j is an error. Throws InputError for indices out of range.
  double pair_per_direction_GBps(int i, int j) const;
  double nic_per_gpu_per_direction_GBps() const;   // all compute NICs shared evenly by the node's GPUs
};

// ---------------------------------------------------------------------------------------------------------------
// The catalog

class HardwareCatalog {
 public:
  HardwareCatalog() = default;             // empty; use builtin() for the shipped catalog

  // The catalog shipped in data/hardware/*.json, read once (copy it to merge files into it). Throws
  // std::logic_error if the shipped data is broken.
  static const HardwareCatalog& builtin();

  // Adds or overrides entries from JSON text of the same schema as data/hardware/*.json: an object with any of
  // "gpus", "links", "systems", each an object mapping names to entries. An existing entry is patched field by
  // field (JSON merge patch, RFC 7386); a new entry must be complete. `origin` names the file in messages.
  // Throws InputError naming origin and field. On error the catalog is unchanged.
  void merge_json(std::string_view json_text, std::string_view origin);

  // Lookups; unknown names throw InputError with the closest names suggested.
  const GpuSpec& gpu(std::string_view name) const;
  const LinkSpec& link(std::string_view name) const;
  const SystemSpec& system(std::string_view name) const;

  // nullptr when absent.
  const GpuSpec* find_gpu(std::string_view name) const;
  const LinkSpec* find_link(std::string_view name) const;
  const SystemSpec* find_system(std::string_view name) const;
  // What `name` is, where it is one: "a GPU (gpuplan catalog gpus)", "a system (...)", "a link (...)"; "" if none.
  std::string kind_of(std::string_view name) const;

  // The GPU whose device_names contain `device_name` (case-insensitive), e.g. "NVIDIA H800" from
  // `nvidia-smi nvlink -s` or "Tesla V100-SXM2-32GB"; nullptr when none does.
  const GpuSpec* gpu_by_device_name(std::string_view device_name) const;

  // The NVLink generation whose `nvidia-smi nvlink -s` per-link rate is within 1% of `rate_GBps`
  // (25.781 -> nvlink2, 26.562 -> nvlink4, 53.125 -> nvlink5); nullptr when none is. A100's 25.0 -> nvlink3.
  const LinkSpec* nvlink_by_reported_rate(double rate_GBps) const;

  // Sorted names.
  std::vector<std::string> gpu_names() const;
  std::vector<std::string> link_names() const;
  std::vector<std::string> system_names() const;

  const std::map<std::string, GpuSpec, std::less<>>& gpus() const { return gpus_; }
  const std::map<std::string, LinkSpec, std::less<>>& links() const { return links_; }
  const std::map<std::string, SystemSpec, std::less<>>& systems() const { return systems_; }

 private:
  // Raw JSON text of every entry, so merges can patch it and derived fields are re-resolved after each merge.
  struct RawEntry {
    std::string json;
    std::string origin;
  };
  std::map<std::string, RawEntry, std::less<>> raw_gpus_, raw_links_, raw_systems_;
  std::map<std::string, GpuSpec, std::less<>> gpus_;
  std::map<std::string, LinkSpec, std::less<>> links_;
  std::map<std::string, SystemSpec, std::less<>> systems_;
  void stage(std::string_view json_text, const std::string& origin);   // patch raw entries, no rebuild
  void rebuild();
};

// ---------------------------------------------------------------------------------------------------------------
// Clusters

enum class NetworkShape {
  single_node,       // one node: no scale-out network
  rail_optimized,    // NIC i of every node on the same leaf ("rail"); GPU i talks to GPU i elsewhere in one hop
  fat_tree,          // every NIC on a (possibly oversubscribed) fat tree
};
std::string_view to_string(NetworkShape shape);                  // "single-node", "rail-optimized", "fat-tree"

struct Cluster {
  std::string name;                      // from the cluster file, or "<nodes>x <system>"
  SystemSpec system;                     // resolved copies: the cluster does not point into a catalog
  GpuSpec gpu;
  int nodes = 1;
  NetworkShape network = NetworkShape::rail_optimized;
  double oversubscription = 1.0;         // fat tree: downlink/uplink ratio at the leaves (2.0 means 2:1); >= 1
  std::string origin;                    // "--system dgx-h100 --nodes 4" or the cluster file

  int total_gpus() const { return nodes * system.gpus_per_node; }
  // Per-GPU scale-out bandwidth, one way, with oversubscription applied (system NICs / GPUs / oversubscription);
  // 0 for one node.
  double scaleout_per_gpu_per_direction_GBps() const;
};

// `--system NAME --nodes N`. Throws InputError for an unknown system (with suggestions) or nodes < 1.
// A one-node cluster gets NetworkShape::single_node, more nodes rail_optimized.
Cluster make_cluster(const HardwareCatalog& catalog, std::string_view system, int nodes);
Cluster make_cluster(std::string_view system, int nodes);                        // builtin catalog

// A cluster file:
//   {"name": "...", "system": "dgx-h100", "nodes": 32,
//    "network": {"shape": "rail-optimized" | "fat-tree", "oversubscription": 1.0},
//    "gpus": {...}, "links": {...}, "systems": {...}}       <- optional catalog additions, as in merge_json
// Throws InputError naming `origin` and the field.
Cluster cluster_from_json(const HardwareCatalog& catalog, std::string_view json_text, std::string_view origin);
Cluster cluster_from_json(std::string_view json_text, std::string_view origin);   // builtin catalog

}  // namespace gpuplan
