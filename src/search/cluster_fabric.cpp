// The search's view of a cluster: its GPU, one node's description, and the links between GPUs.
#include <algorithm>

#include "gpuplan/plan.hpp"

namespace gpuplan {

void set_cluster(PlanInputs& in, const Cluster& c) {
  in.gpu = c.gpu;
  in.system = c.system;
  Fabric& f = in.fabric;
  f = Fabric{};
  f.name = c.name;
  f.gpus_per_node = c.system.gpus_per_node;
  f.nodes = c.nodes;
  const bool scaleup = c.system.scaleup.topology != ScaleUpTopology::none;
  f.domain_size = scaleup ? std::max(1, c.system.scaleup.domain_gpus) : 1;
  f.domain_per_gpu_GBps = scaleup ? c.system.scaleup.per_gpu_per_direction_GBps : 0.0;
  f.nvswitch = c.system.scaleup.topology == ScaleUpTopology::nvswitch;
  f.pcie_per_gpu_GBps = c.system.host_per_direction_GBps;
  f.nic_per_gpu_GBps = c.scaleout_per_gpu_per_direction_GBps();
  f.nics_per_node = c.system.nics_per_node;
  f.sm_version = c.gpu.sm_version;
  if (in.base.capacity_bytes <= 0) in.base.capacity_bytes = c.gpu.usable_memory_bytes;
}

}  // namespace gpuplan
