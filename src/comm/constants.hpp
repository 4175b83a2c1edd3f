#pragma once
// The constants of the collective cost model, read from data/comm.json (each with its source) and optionally
// patched by a "comm": {"constants": {...}} section of a user file.
#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/comm.hpp"

namespace gpuplan {

namespace comm {

// The algorithms the model prices. The first kNcclAlgorithms are NCCL's own and index the per-algorithm tables of
// data/comm.json (AlgoProtoTable), in the order the file names them; the others are this model's: a hierarchical
// scheme across nodes, point-to-point for AllToAll and SendRecv, and a single rank that moves nothing.
enum class Algorithm { tree, ring, nvls, nvls_tree, hierarchical, p2p, local };
inline constexpr std::size_t kNcclAlgorithms = 4;
static_assert(static_cast<std::size_t>(Algorithm::nvls_tree) + 1 == kNcclAlgorithms);

// NCCL's protocols, in NCCL's order, which data/comm.json's triples (per-protocol values) follow.
enum class Protocol { ll, ll128, simple };
inline constexpr std::size_t kProtocols = 3;
inline constexpr std::array<Protocol, kProtocols> kAllProtocols = {Protocol::ll, Protocol::ll128, Protocol::simple};

constexpr std::size_t index(Algorithm algorithm) { return static_cast<std::size_t>(algorithm); }
constexpr std::size_t index(Protocol protocol) { return static_cast<std::size_t>(protocol); }

}  // namespace comm

// A value per (NCCL algorithm, protocol), as data/comm.json's latency tables give them; only the first
// kNcclAlgorithms algorithms have one.
struct AlgoProtoTable {
  std::array<std::array<double, comm::kProtocols>, comm::kNcclAlgorithms> values{};  // [algorithm][protocol]

  double operator()(comm::Algorithm algorithm, comm::Protocol protocol) const {
    return values[comm::index(algorithm)][comm::index(protocol)];
  }
};

struct CommArchConstants {
  int min_sm = 0;
  std::array<double, 3> ll_max_GBps{};             // 1 node / 2 nodes / 4+ nodes
  double per_channel_ring_ll128_GBps = 0;
  std::array<double, 3> per_channel_tree_ll128_GBps{};
  std::array<double, 3> per_channel_tree_GBps{};
  std::array<double, 3> per_channel_nvls_tree_GBps{};
  double nvls_efficiency = 0;
  double channel_rung_intra_GBps = 40;
  double channel_rung_inter_GBps = 48;
};

struct CommConstants {
  std::string nccl_version;
  AlgoProtoTable base_latency_us{};
  AlgoProtoTable hw_latency_nvlink_us{};
  AlgoProtoTable hw_latency_pcie_us{};
  AlgoProtoTable hw_latency_net_us{};
  double latency_inter_us = 0;
  double net_overhead_intel_us = 1, net_overhead_amd_us = 2, net_overhead_simple_factor = 3;
  double ring_simple_multinode_factor_pre_ampere = 1.9, ring_simple_multinode_factor = 1.4;
  double ll_fraction = 0.5, ll128_fraction = 0.92, tree_fraction = 0.92, tree_ll_divisor = 3.8;
  double tree_ll128_one_node = 7.0 / 9.0, tree_ll128_multi_node = 120.0 / 128.0;
  double tree_pattern_factor = 0.85;
  std::array<std::vector<double>, comm::kProtocols> tree_correction;  // per protocol
  std::vector<CommArchConstants> arch;             // sorted by min_sm
  int channel_duplication = 2;
  int nvls_channels = 16;
  double nvls_measured_fraction = 1.0;             // measured NVLS busbw over NCCL's model figure
  double p2p_base_us = 8.4, p2p_nvlink_us = 3.4, p2p_pcie_us = 5.7, p2p_net_us = 14.0;
  double pcie_fallback_GBps = 24;
  double net_efficiency = 1.0;                     // fraction of a NIC's line rate NCCL moves
  // Measured collectives inside one NVLink node, per GPU name and collective (by Collective's order; zeros: not
  // measured): bus bandwidth and latency per ring step, applied as an intra-node calibration.
  std::map<std::string, std::array<TierCalibration, 6>, std::less<>> measured_intra_node;
  const TierCalibration* measured(std::string_view gpu, Collective collective) const;
  nlohmann::json document;                         // the merged "constants" object, value+source per name

  const CommArchConstants& for_sm(int sm_version) const;
};

// The built-in constants (data/comm.json), parsed once.
std::shared_ptr<const CommConstants> builtin_comm_constants();

// `base` with the {name: value} pairs of `overrides` applied (a name as in data/comm.json's "constants").
// Throws InputError naming `origin` and the name for an unknown name or a value of the wrong shape.
std::shared_ptr<const CommConstants> patch_comm_constants(const CommConstants& base, const nlohmann::json& overrides,
                                                          const std::string& origin);

}  // namespace gpuplan
