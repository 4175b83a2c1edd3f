#pragma once
// Cost of collectives on a fabric, in the manner of NCCL's own tuning model (latency + bytes / bandwidth per
// algorithm and protocol), decomposed over the scale-up domain (NVLink/NVSwitch) and the NICs.
// Pure functions; see docs/comm.md.
#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/hardware.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

struct Topology;  // gpuplan/topology.hpp

enum class Collective { allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv };
const char* to_string(Collective c);

// Per-tier bandwidth and latency after any calibration (data/comm.json defaults, or `gpuplan comm --calibrate`).
struct TierCalibration {
  double bus_GBps = 0;       // achievable bus bandwidth (nccl-tests busbw) at large sizes; 0: from the links
  double latency_us = 0;     // fixed cost per collective; 0: from the NCCL constants
};

// What the comm model needs to know about the machines.
struct Fabric {
  std::string name;
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
};
Fabric fabric_from_cluster(const Cluster& cluster);
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

}  // namespace gpuplan
