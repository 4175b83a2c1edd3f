#pragma once
// Cost of collectives on a fabric, in the manner of NCCL's own tuning model (latency + bytes / bandwidth per
// algorithm and protocol), decomposed over the scale-up domain (NVLink/NVSwitch) and the NICs.
// Pure functions; see docs/comm.md.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/hardware.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

struct Topology;       // gpuplan/topology.hpp
struct CommConstants;  // data/comm.json, parsed (src/comm/constants.hpp)

enum class Collective { allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv };
const char* to_string(Collective c);
// "allreduce", "all_reduce", "all-reduce", "ar", ... -> Collective; nullopt when not a collective name.
std::optional<Collective> collective_from_string(std::string_view name);

// Per-tier bandwidth and latency after any calibration (data/comm.json defaults, or `gpuplan comm --calibrate`).
struct TierCalibration {
  double bus_GBps = 0;       // achievable bus bandwidth (nccl-tests busbw) at large sizes; 0: from the links
  double latency_us = 0;     // fixed cost per collective; 0: from the NCCL constants
  double step_latency_us = 0;  // added per ring step (2(n-1) for allreduce, n-1 for allgather...); fitted only
                               // when the calibration logs cover several rank counts
  // The bus bandwidth of each group size the logs measured (ranks -> GB/s), when they measured several: NCCL's
  // busbw still changes with the ranks (2 to 8 A100s on one NVSwitch: 197 to 229 GB/s). A size between two
  // measured ones interpolates on log2(ranks), one outside takes the nearest. Empty: bus_GBps for every size.
  std::map<int, double> bus_GBps_by_ranks;
};
// The bus bandwidth a calibrated tier gives a group of `ranks` (bus_GBps_by_ranks, else bus_GBps).
double calibrated_bus_GBps(const TierCalibration& calibration, int ranks);

// What the comm model needs to know about the machines.
struct Fabric {
  std::string name;
  std::string gpu;                       // the catalog's GPU name (measured intra-node collectives, data/comm.json)
  int gpus_per_node = 1;
  int nodes = 1;
  int domain_size = 1;                   // GPUs that share the scale-up fabric (NVLink domain)
  double domain_per_gpu_GBps = 0;        // per GPU, per direction, inside the domain
  bool nvswitch = false;                 // all-to-all switch inside the domain (NVLS-capable on sm90+)
  double pcie_per_gpu_GBps = 0;          // per GPU, per direction, outside NVLink inside a node
  double nic_per_gpu_GBps = 0;           // per GPU, per direction, scale-out (after oversubscription)
  int nics_per_node = 0;
  int sm_version = 80;                   // NCCL's per-architecture constants
  std::vector<std::vector<double>> pair_GBps;  // optional node-local per-pair bandwidth (parsed topologies)
  TierCalibration intra;                 // calibrated inside one node
  TierCalibration inter;                 // calibrated across nodes
  bool amd_host = false;                 // NCCL charges AMD hosts 2 us network overhead instead of 1
  bool amd_gpus = false;                 // AMD GPUs: the domain is xGMI (Infinity Fabric), the library RCCL
  std::shared_ptr<const CommConstants> constants;  // null: the built-in data/comm.json
  std::vector<std::string> calibration_sources;    // files the calibration came from
};
// What the user knows the fabric's parts as: "NVLink" or "xGMI", "NCCL" or "RCCL".
std::string_view scaleup_name(const Fabric& fabric);
std::string_view collective_library(const Fabric& fabric);

// Link rates are those of NCCL's topology graph (the catalog's nccl_model_GBps: 20 GB/s per NVLink 3 link, 48 for
// PCIe 5 x16), looked up in `catalog` (the built-in one when null); NIC rates are nominal.
Fabric fabric_from_cluster(const Cluster& cluster, const HardwareCatalog* catalog = nullptr);
// One node as a parsed topology shows it (`nodes` = 1; set it for more). `gpu` may be null (inferred from the
// topology's GPU names); nic_per_gpu_GBps 0: from the topology's NICs.
Fabric fabric_from_topology(const Topology& topology, const GpuSpec* gpu, double nic_per_gpu_GBps);

// Which GPUs a group's ranks occupy: `ranks` members, `ranks_per_node` of them on each node they span, and how
// many such groups run at once on a node and share its NICs.
struct GroupPlacement {
  std::int64_t ranks = 1;
  std::int64_t ranks_per_node = 1;
  std::int64_t concurrent_groups_per_node = 1;
};

struct CollectiveCost {
  double time_s = 0;
  double algbw_GBps = 0;                 // nccl-tests definitions (docs/comm.md)
  double busbw_GBps = 0;
  std::string algorithm;                 // "ring", "tree", "nvls", "hierarchical ring", ...
  std::string protocol;                  // "LL", "LL128", "Simple"
  std::string reason;                    // why this algorithm was chosen
};

// `bytes` is nccl-tests' size: the per-rank buffer for allreduce/broadcast/sendrecv, the whole buffer for
// allgather/reducescatter/alltoall.
CollectiveCost collective_cost(const Fabric& fabric, Collective collective, double bytes, const GroupPlacement& group);

// Fast path for searches: time only, no strings.
double collective_time_s(const Fabric& fabric, Collective collective, double bytes, const GroupPlacement& group);

// Every (algorithm, protocol) the model priced for this call, fastest first; the first is collective_cost's.
std::vector<CollectiveCost> collective_candidates(const Fabric& fabric, Collective collective, double bytes,
                                                  const GroupPlacement& group);

// nccl-tests' bus bandwidth factor for n ranks: 2(n-1)/n allreduce, (n-1)/n allgather/reducescatter/alltoall,
// 1 broadcast/sendrecv (busbw = algbw x factor).
double busbw_factor(Collective collective, std::int64_t ranks);

// ---------------------------------------------------------------------------------------------------------------
// Calibration from nccl-tests outputs (docs/comm.md)

struct NcclTestsRow {
  double size_bytes = 0;
  double time_us = 0;                    // mean of out-of-place and in-place when both are given
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

struct NcclTestsLog {
  std::string origin;                    // file name
  Collective collective = Collective::allreduce;
  int ranks = 0;                         // from "#  Rank" lines, the file name (vTrain "GPU8") or busbw/algbw
  int hosts = 0;                         // distinct hosts in the "#  Rank" lines; 0 when not printed
  double avg_busbw_GBps = 0;             // "# Avg bus bandwidth" when printed
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> warnings;
};

// Reads all_reduce_perf / all_gather_perf / reduce_scatter_perf / alltoall_perf (and broadcast, sendrecv)
// output: the whitespace table with its "#  size count type redop root time algbw busbw #wrong" header (older
// versions without root, "N/A" in #wrong, out-of-place and in-place columns), and the comma-separated
// "size(B),count,type,time(ns),busbw(GB/s),..." tables of vTrain's NCCL lookup tables. `collective` is used when
// the text and the file name do not say. Throws InputError "not an nccl-tests output: ..." naming `origin`.
NcclTestsLog parse_nccl_tests(std::string_view text, std::string_view origin,
                              std::optional<Collective> collective = std::nullopt, int ranks = 0);

struct TierFit {
  bool fitted = false;
  TierCalibration calibration;
  int points = 0;
  int files = 0;
  double mean_rel_error = 0;             // |fit - measured| / measured over the fitted rows
  double max_rel_error = 0;
  std::vector<std::string> sources;
};

struct CommCalibration {
  TierFit intra;                         // logs whose ranks all sit in one node
  TierFit inter;                         // logs across nodes
};

// Fits t = latency + steps x step_latency + size x factor / bus_GBps per tier by least squares on relative
// residuals. A log is inter-node when it names more than one host or has more ranks than `gpus_per_node`.
// Throws InputError when a tier would rest on fewer than 2 rows.
CommCalibration calibrate_comm(const std::vector<NcclTestsLog>& logs, int gpus_per_node);

// {"comm": {"intra": {...}, "inter": {...}, "sources": [...]}}: the file `--comm-calibration` reads.
std::string comm_calibration_json(const CommCalibration& calibration);

// Applies a JSON document with a "comm" section to a fabric: "intra"/"inter" {bus_GBps, latency_us,
// step_latency_us}, "constants" {name: value} overriding data/comm.json, "sources". Throws InputError naming
// `origin` and the key.
void apply_comm_overrides(Fabric& fabric, std::string_view json_text, std::string_view origin);

}  // namespace gpuplan
