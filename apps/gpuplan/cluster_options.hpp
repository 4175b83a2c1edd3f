#pragma once
// The machines a job runs on: `--system NAME --nodes N`, or `--topology FILE` (a cluster JSON file, or the text
// of `nvidia-smi topo -m` / `rocm-smi --showtopo` / `amd-smi topology` for one node). Shared by estimate and plan.
#include <CLI/CLI.hpp>
#include <string>

#include "gpuplan/comm.hpp"
#include "gpuplan/hardware.hpp"

namespace gpuplan::cli {

struct ResolvedCluster {
  Fabric fabric;
  GpuSpec gpu;                 // the GPU that computes (the system's, or --gpu)
  std::string origin;          // "--system dgx-a100 --nodes 4", the file
};

struct ClusterOptions {
  std::string system;
  int nodes = -1;              // -1: as many as the layout needs
  std::string topology;
  double nic_GBps = 0;         // --nic-GBps with a parsed topology: per GPU, one direction

  // Registers --system, --nodes, --topology, --nic-GBps; the object must outlive parsing.
  void add_to(CLI::App& cmd);
  // `gpu_name`: --gpu ("" = the system's GPU). `gpus_needed`: ranks of the layout, to size the default node count.
  // Throws InputError naming the option (unknown system, nodes < 1, unreadable file, neither option given).
  ResolvedCluster resolve(const HardwareCatalog& catalog, const std::string& gpu_name, std::int64_t gpus_needed) const;
};

}  // namespace gpuplan::cli
