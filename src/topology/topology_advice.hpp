#pragma once
// Internal to src/topology: the placement advice of a topology report (stage 5 of analyze_topology).
#include <string>
#include <vector>

#include "gpuplan/topology.hpp"

namespace gpuplan::detail {

struct TopologyAdvice {
  std::vector<std::string> advice;    // appended to TopologyReport::advice, in this order
  std::vector<std::string> warnings;  // appended to TopologyReport::warnings, in this order
};

// Reads only the report: every figure the advice quotes (bandwidths, domains, groups, rates, NIC sharing) is one
// of its fields, so the advice cannot disagree with what the report shows.
TopologyAdvice topology_advice(const TopologyReport& report);

// Largest power of two <= x, and 1 below 2: the tensor-parallel size a group of x GPUs can hold.
int pow2_floor(int x);

// GPUs of the report's node.
int gpu_count(const TopologyReport& report);

// How near a path of `nvidia-smi topo -m` code (NV12, PIX, SYS, ...) is: path_rank of its classified type.
int rank_of(const std::string& code);

}  // namespace gpuplan::detail
