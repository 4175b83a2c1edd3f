// Collective cost in the manner of NCCL's tuning model (src/graph/tuning.cc): for every algorithm and protocol,
// t = latency + bytes / bandwidth, with the fastest taken; plus a hierarchical scheme across nodes and
// point-to-point models for AllToAll and SendRecv. See docs/comm.md.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "comm/constants.hpp"
#include "comm/group_collective.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan {

const char* to_string(Collective collective) {
  switch (collective) {
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::reducescatter: return "reducescatter";
    case Collective::alltoall: return "alltoall";
    case Collective::broadcast: return "broadcast";
    case Collective::sendrecv: return "sendrecv";
  }
  return "?";
}

std::optional<Collective> collective_from_string(std::string_view name) {
  std::string key;  // lower case, without separators
  for (char ch : name) {
    if (ch == '_' || ch == '-' || ch == ' ') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (key == "allreduce" || key == "ar") return Collective::allreduce;
  if (key == "allgather" || key == "ag") return Collective::allgather;
  if (key == "reducescatter" || key == "rs") return Collective::reducescatter;
  if (key == "alltoall" || key == "a2a") return Collective::alltoall;
  if (key == "broadcast" || key == "bcast") return Collective::broadcast;
  if (key == "sendrecv" || key == "p2p") return Collective::sendrecv;
  return std::nullopt;
}

double busbw_factor(Collective collective, std::int64_t ranks) {
  const double rank_count = static_cast<double>(std::max<std::int64_t>(ranks, 1));
  switch (collective) {
    case Collective::allreduce: return 2.0 * (rank_count - 1) / rank_count;
    case Collective::allgather:
    case Collective::reducescatter:
    case Collective::alltoall: return (rank_count - 1) / rank_count;
    case Collective::broadcast:
    case Collective::sendrecv: return 1.0;
  }
  return 1.0;
}

namespace comm {

namespace {

const char* protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

constexpr double kNever = std::numeric_limits<double>::infinity();

// floor(log2(v)) for v >= 1; 0 below.
int floor_log2(std::int64_t v) {
  return v > 1 ? static_cast<int>(std::bit_width(static_cast<std::uint64_t>(v))) - 1 : 0;
}

double to_bytes_per_s(double GBps) { return GBps * 1e9; }

void validate_bytes(double bytes) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw InputError("size", fmt::format("{}", bytes), "a finite number of bytes >= 0");
}

// The group's ranks on each node: as asked, but no more than the ranks and the node's GPUs.
std::int64_t placed_ranks_per_node(const GroupPlacement& group, int gpus_per_node) {
  return std::min(group.ranks, std::min<std::int64_t>(group.ranks_per_node, gpus_per_node));
}

std::int64_t nodes_spanned(std::int64_t ranks, std::int64_t ranks_per_node) {
  return (ranks + ranks_per_node - 1) / ranks_per_node;
}

void validate_group(const Fabric& fabric, const GroupPlacement& group) {
  if (group.ranks < 1) throw InputError("ranks", std::to_string(group.ranks), "a whole number >= 1");
  if (group.ranks_per_node < 1)
    throw InputError("ranks_per_node", std::to_string(group.ranks_per_node), "a whole number >= 1");
  if (group.concurrent_groups_per_node < 1)
    throw InputError("concurrent groups per node", std::to_string(group.concurrent_groups_per_node),
                     "a whole number >= 1");
  const int gpus_per_node = std::max(fabric.gpus_per_node, 1);
  if (group.ranks_per_node > gpus_per_node && group.ranks > gpus_per_node)
    throw InputError("ranks_per_node", std::to_string(group.ranks_per_node),
                     fmt::format("at most {} ({} has {} GPUs per node)", gpus_per_node, fabric.name, gpus_per_node));
  const std::int64_t ranks_per_node = placed_ranks_per_node(group, gpus_per_node);
  if (nodes_spanned(group.ranks, ranks_per_node) > std::max(fabric.nodes, 1))
    throw InputError("ranks", std::to_string(group.ranks),
                     fmt::format("at most {} with {} ranks per node on {} ({} node{} of {} GPUs)",
                                 static_cast<std::int64_t>(std::max(fabric.nodes, 1)) * ranks_per_node,
                                 ranks_per_node, fabric.name, fabric.nodes, fabric.nodes == 1 ? "" : "s",
                                 gpus_per_node));
}

// The links inside the node: the NVLink/xGMI domain when it holds the node's ranks, else PCIe.
void set_intra_node_links(const Fabric& fabric, Setup& setup) {
  const double pcie_GBps = fabric.pcie_per_gpu_GBps > 0 ? fabric.pcie_per_gpu_GBps
                                                        : setup.constants->pcie_fallback_GBps;
  const bool has_domain = fabric.domain_per_gpu_GBps > 0 && fabric.domain_size > 1;
  setup.intra_node_nvlink = setup.ranks_per_node <= 1 ? has_domain
                                                      : fabric.domain_size >= setup.ranks_per_node && has_domain;
  setup.intra_node_bus_GBps = setup.intra_node_nvlink ? fabric.domain_per_gpu_GBps : pcie_GBps;
  setup.intra_node_hw_latency_us =
      setup.intra_node_nvlink ? &setup.constants->hw_latency_nvlink_us : &setup.constants->hw_latency_pcie_us;
}

// Each rank's share of its node's NICs: the node's scale-out bandwidth over the ranks of all concurrent groups
// there, at most one NIC. A NIC moves net_efficiency of its line rate (headers and NCCL's chunking take the rest).
void set_nic_shares(const Fabric& fabric, Setup& setup) {
  const int gpus_per_node = std::max(fabric.gpus_per_node, 1);
  const double per_gpu_GBps = fabric.nic_per_gpu_GBps * setup.constants->net_efficiency;
  const double node_GBps = per_gpu_GBps * gpus_per_node;
  const double one_nic_GBps = fabric.nics_per_node > 0 ? node_GBps / fabric.nics_per_node : per_gpu_GBps;
  setup.nic_share_per_rank_GBps =
      std::min(one_nic_GBps, node_GBps / static_cast<double>(setup.concurrent_groups * setup.ranks_per_node));
  setup.nic_share_per_rank_packed_GBps = std::min(one_nic_GBps, node_GBps / static_cast<double>(gpus_per_node));
  if (!(setup.nic_share_per_rank_GBps > 0))
    throw InputError("cluster.nodes", std::to_string(fabric.nodes),
                     fmt::format("1: {} has no scale-out bandwidth (nic_per_gpu_GBps is 0)", fabric.name));
}

// A collective measured on the fabric's GPUs inside one NVLink node (data/comm.json measured_intra_node) stands
// for the model there, as an intra-node calibration would.
void set_measured(const Fabric& fabric, Setup& setup) {
  setup.measured = setup.nodes == 1 && setup.intra_node_nvlink && !fabric.gpu.empty()
                       ? setup.constants->measured(fabric.gpu, setup.collective)
                       : nullptr;
}

Setup make_setup(const Fabric& fabric, Collective collective, const GroupPlacement& group) {
  validate_group(fabric, group);
  Setup setup;
  static const CommConstants* const builtin = builtin_comm_constants().get();  // kept alive by its static owner
  setup.constants = fabric.constants ? fabric.constants.get() : builtin;
  setup.arch = &setup.constants->for_sm(fabric.sm_version);
  setup.collective = collective;
  setup.ranks = group.ranks;
  setup.ranks_per_node = placed_ranks_per_node(group, std::max(fabric.gpus_per_node, 1));
  setup.nodes = nodes_spanned(setup.ranks, setup.ranks_per_node);
  setup.concurrent_groups = group.concurrent_groups_per_node;
  setup.node_class = setup.nodes <= 1 ? 0 : (setup.nodes == 2 ? 1 : 2);
  setup.busbw_factor = busbw_factor(collective, setup.ranks);
  set_intra_node_links(fabric, setup);
  if (setup.nodes > 1) set_nic_shares(fabric, setup);
  set_measured(fabric, setup);
  return setup;
}

// A term whose time is latency + bytes x per_byte / rate_bytes_per_s at every size.
Term linear_term(Algorithm algorithm, Protocol protocol, double latency_s, double per_byte, double rate_bytes_per_s) {
  return Term{algorithm, protocol, latency_s, per_byte / rate_bytes_per_s, kNever, latency_s, false};
}

// NCCL's channels for a bus rate: one per whole rung (the architecture's per-channel rate) in it, at least one,
// times channel_duplication.
int channel_count(const Setup& setup, double bus_GBps, bool across_nodes) {
  const double rung_GBps = across_nodes ? setup.arch->channel_rung_inter_GBps : setup.arch->channel_rung_intra_GBps;
  const double ratio = bus_GBps / rung_GBps;
  const double whole = ratio > 0 ? std::min(ratio, 1e6) : 0;  // truncation is floor for a positive ratio
  return setup.constants->channel_duplication * std::max(1, static_cast<int>(whole));
}

// The latency of one step across nodes: the network's, plus the inter-node latency (twice for Simple).
double inter_node_step_us(const CommConstants& constants, Algorithm algorithm, Protocol protocol) {
  return constants.hw_latency_net_us(algorithm, protocol) +
         (protocol == Protocol::simple ? 2 : 1) * constants.latency_inter_us;
}

// LL128 is priced only where the node-local ranks share NVLink, or where each node holds one rank.
bool ll128_allowed(const Setup& setup) { return setup.intra_node_nvlink || setup.ranks_per_node <= 1; }

// The ring's fixed cost: NCCL's base latency plus one step latency per step, the steps between nodes at the
// network's.
double ring_latency_us(const Setup& setup, Protocol protocol) {
  const CommConstants& constants = *setup.constants;
  const bool allreduce = setup.collective == Collective::allreduce;
  const std::int64_t ranks = setup.ranks, nodes = setup.nodes;
  const bool gather_or_scatter =
      setup.collective == Collective::allgather || setup.collective == Collective::reducescatter;
  const std::int64_t steps = allreduce ? 2 * (ranks - 1) : gather_or_scatter ? ranks - 1 : ranks;
  const std::int64_t inter_node_steps = nodes > 1 ? (allreduce ? 2 * (nodes - 1) : nodes - 1) : 0;
  double intra_step_us = (*setup.intra_node_hw_latency_us)(Algorithm::ring, protocol);
  const double net_overhead_us =
      (protocol == Protocol::simple ? constants.net_overhead_simple_factor : 1.0) * constants.net_overhead_intel_us;
  if (nodes > 1) intra_step_us = std::max(intra_step_us, net_overhead_us);
  return constants.base_latency_us(Algorithm::ring, protocol) +
         static_cast<double>(steps - inter_node_steps) * intra_step_us +
         static_cast<double>(inter_node_steps) * inter_node_step_us(constants, Algorithm::ring, protocol);
}

// Across nodes no algorithm moves the group's data faster than its share of the node's NICs: measured busbw of
// multi-node AllReduce stays at or below the node's NIC total whatever NCCL picks (4x 8 H100 with 8x 400G: 320-380
// GB/s, 4x 8 B200: 382, 4x 8 H200 on EFA: 365; shared/data/nccl-tests/published-busbw.csv), although a tree's or
// a hierarchy's bytes per node would allow up to twice that. The ring reaches it by construction.
double network_bus_cap_GBps(const Setup& setup) {
  return static_cast<double>(setup.ranks_per_node) * setup.nic_share_per_rank_GBps;
}

// Ring: every collective but AllToAll and SendRecv.
void add_ring_terms(const Setup& setup, GroupCollective& out) {
  const CommConstants& constants = *setup.constants;
  const CommArchConstants& arch = *setup.arch;
  const bool across_nodes = setup.nodes > 1;
  const double bus_GBps =
      across_nodes
          ? std::min(setup.intra_node_bus_GBps, network_bus_cap_GBps(setup))
          : setup.intra_node_bus_GBps;
  const int channels = channel_count(setup, bus_GBps, across_nodes);
  for (const Protocol protocol : kAllProtocols) {
    if (protocol == Protocol::ll128 && !ll128_allowed(setup)) continue;
    const double latency_us = ring_latency_us(setup, protocol);
    double protocol_bus_GBps = bus_GBps;
    if (protocol == Protocol::ll)
      protocol_bus_GBps = std::min(arch.ll_max_GBps[setup.node_class], constants.ll_fraction * bus_GBps);
    if (protocol == Protocol::ll128)
      protocol_bus_GBps = std::min(constants.ll128_fraction * bus_GBps, channels * arch.per_channel_ring_ll128_GBps);
    Term term = linear_term(Algorithm::ring, protocol, latency_us * 1e-6, setup.busbw_factor,
                            to_bytes_per_s(protocol_bus_GBps));
    if (setup.collective == Collective::allreduce && across_nodes && protocol == Protocol::simple) {
      // NCCL: from 64 bytes per channel and rank on
      term.large_from_bytes = 64.0 * static_cast<double>(channels) * static_cast<double>(setup.ranks);
      term.large_latency_s = latency_us *
                             (arch.min_sm >= 80 ? constants.ring_simple_multinode_factor
                                                : constants.ring_simple_multinode_factor_pre_ampere) *
                             1e-6;
    }
    out.add_term(term);
  }
}

double tree_correction(const CommConstants& constants, double bytes, Protocol protocol) {
  const std::vector<double>& factors = constants.tree_correction[index(protocol)];
  const double units = std::floor(bytes / 64.0);
  if (units < 1) return factors.front();
  const int bucket = floor_log2(static_cast<std::int64_t>(units));
  return bucket < static_cast<int>(factors.size()) ? factors[static_cast<std::size_t>(bucket)] : 1.0;
}

// The tree's bus rate for `protocol`, from the pattern's bus rate and the architecture's caps.
double tree_protocol_bus_GBps(const Setup& setup, Protocol protocol, double bus_GBps, int channels) {
  const CommConstants& constants = *setup.constants;
  const CommArchConstants& arch = *setup.arch;
  switch (protocol) {
    case Protocol::simple:
      return std::min(constants.tree_fraction * bus_GBps, channels * arch.per_channel_tree_GBps[setup.node_class]);
    case Protocol::ll: return std::min(bus_GBps / constants.tree_ll_divisor, arch.ll_max_GBps[setup.node_class]);
    case Protocol::ll128:
      return std::min(
          bus_GBps * (setup.nodes == 1 ? constants.tree_ll128_one_node : constants.tree_ll128_multi_node),
          channels * arch.per_channel_tree_ll128_GBps[setup.node_class]);
  }
  return 0;
}

// NCCL Tree AllReduce: a chain inside each node, a double binary tree across nodes. algbw = busBw / 2.
void add_tree_terms(const Setup& setup, GroupCollective& out) {
  if (setup.collective != Collective::allreduce) return;
  const CommConstants& constants = *setup.constants;
  double bus_GBps = setup.intra_node_bus_GBps;
  // Across nodes: the group's share of the node's NICs (network_bus_cap_GBps), less the tree pattern's loss.
  if (setup.nodes > 1)
    bus_GBps = std::min(bus_GBps, network_bus_cap_GBps(setup)) * constants.tree_pattern_factor;
  const int channels = channel_count(setup, bus_GBps, setup.nodes > 1);
  for (const Protocol protocol : kAllProtocols) {
    if (protocol == Protocol::ll128 && !ll128_allowed(setup)) continue;
    const double intra_step_us = (*setup.intra_node_hw_latency_us)(Algorithm::tree, protocol);
    const double inter_step_us = inter_node_step_us(constants, Algorithm::tree, protocol);
    const double latency_us =
        constants.base_latency_us(Algorithm::tree, protocol) +
        2.0 * (static_cast<double>(setup.ranks_per_node - 1) * intra_step_us + floor_log2(setup.nodes) * inter_step_us);
    const double protocol_bus_GBps = tree_protocol_bus_GBps(setup, protocol, bus_GBps, channels);
    // algbw = half the (corrected) bus rate
    Term term = linear_term(Algorithm::tree, protocol, latency_us * 1e-6, 1.0, to_bytes_per_s(0.5 * protocol_bus_GBps));
    term.tree_corrected = true;
    out.add_term(term);
  }
}

bool nvls_capable(const Fabric& fabric, const Setup& setup) {
  return fabric.nvswitch && fabric.sm_version >= 90 && setup.arch->nvls_efficiency > 0 && setup.intra_node_nvlink &&
         setup.ranks_per_node >= 2 &&
         (setup.collective == Collective::allreduce || setup.collective == Collective::allgather ||
          setup.collective == Collective::reducescatter);
}

// NVLS bus bandwidth inside one node of the group's ranks per node (nccl-tests busbw), NCCL's formula.
double nvls_bus_GBps(const Setup& setup) {
  const double channels = setup.constants->nvls_channels;
  const double nvls_GBps = setup.intra_node_bus_GBps * setup.arch->nvls_efficiency * (channels - 1) / channels *
                           setup.constants->nvls_measured_fraction;
  if (setup.collective == Collective::allreduce) return 2.0 * nvls_GBps;
  return nvls_GBps * static_cast<double>(setup.ranks_per_node - 1) / static_cast<double>(setup.ranks_per_node);
}

// NVLink SHARP inside one node; NVLSTree (NVLS inside, trees across) for AllReduce over several nodes.
void add_nvls_term(const Fabric& fabric, const Setup& setup, GroupCollective& out) {
  if (!nvls_capable(fabric, setup)) return;
  const CommConstants& constants = *setup.constants;
  if (setup.nodes == 1) {
    const double latency_s = (constants.base_latency_us(Algorithm::nvls, Protocol::simple) +
                              constants.hw_latency_nvlink_us(Algorithm::nvls, Protocol::simple)) * 1e-6;
    out.add_term(linear_term(Algorithm::nvls, Protocol::simple, latency_s, setup.busbw_factor,
                             to_bytes_per_s(nvls_bus_GBps(setup))));
    return;
  }
  if (setup.collective != Collective::allreduce) return;
  const double channels_cap_GBps = constants.nvls_channels * setup.arch->per_channel_nvls_tree_GBps[setup.node_class];
  if (!(channels_cap_GBps > 0)) return;
  const double bus_GBps = std::min({nvls_bus_GBps(setup), network_bus_cap_GBps(setup), channels_cap_GBps});
  const double inter_step_us = inter_node_step_us(constants, Algorithm::nvls_tree, Protocol::simple);
  const double latency_s = (constants.base_latency_us(Algorithm::nvls_tree, Protocol::simple) +
                            constants.hw_latency_nvlink_us(Algorithm::nvls_tree, Protocol::simple) +
                            2.0 * floor_log2(setup.nodes) * inter_step_us) * 1e-6;
  out.add_term(
      linear_term(Algorithm::nvls_tree, Protocol::simple, latency_s, setup.busbw_factor, to_bytes_per_s(bus_GBps)));
}

// Hierarchical across nodes: reduce-scatter inside the node, the 1/(ranks per node) shard across nodes over each
// rank's NIC share, all-gather inside the node; the phases pipelined by chunks, so the slowest phase sets the rate.
void add_hierarchical_term(const Fabric& fabric, const Setup& setup, GroupCollective& out) {
  if (setup.nodes <= 1 || setup.ranks_per_node <= 1) return;
  if (setup.collective != Collective::allreduce && setup.collective != Collective::allgather &&
      setup.collective != Collective::reducescatter)
    return;
  const CommConstants& constants = *setup.constants;
  const double ranks_per_node = static_cast<double>(setup.ranks_per_node);
  const double nodes = static_cast<double>(setup.nodes);
  const double passes = setup.collective == Collective::allreduce ? 2.0 : 1.0;  // reduce-scatter and all-gather
  double intra_bus_GBps = setup.intra_node_bus_GBps;
  // nvls_bus_GBps reads the ranks per node only, not the nodes
  if (nvls_capable(fabric, setup)) intra_bus_GBps = std::max(intra_bus_GBps, nvls_bus_GBps(setup));
  const double intra_share = passes * (ranks_per_node - 1) / ranks_per_node;  // of the size, per rank, over NVLink
  const double net_share = passes * (nodes - 1) / nodes / ranks_per_node;      // of the size, per rank, over its NICs
  const double seconds_per_byte = std::max({intra_share / to_bytes_per_s(intra_bus_GBps),
                                            net_share / to_bytes_per_s(setup.nic_share_per_rank_GBps),
                                            setup.busbw_factor / to_bytes_per_s(network_bus_cap_GBps(setup))});
  const double intra_steps = passes * (ranks_per_node - 1), inter_steps = passes * (nodes - 1);
  const double latency_us = constants.base_latency_us(Algorithm::ring, Protocol::simple) +
                            intra_steps * (*setup.intra_node_hw_latency_us)(Algorithm::ring, Protocol::simple) +
                            inter_steps * inter_node_step_us(constants, Algorithm::ring, Protocol::simple);
  out.add_term(linear_term(Algorithm::hierarchical, Protocol::simple, latency_us * 1e-6, seconds_per_byte, 1.0));
}

// AllToAll and SendRecv are point-to-point operations in NCCL (no tuning model): all peers at once.
void add_p2p_term(const Setup& setup, GroupCollective& out) {
  const CommConstants& constants = *setup.constants;
  const double ranks = static_cast<double>(setup.ranks), ranks_per_node = static_cast<double>(setup.ranks_per_node);
  const double intra_node_us = setup.intra_node_nvlink ? constants.p2p_nvlink_us : constants.p2p_pcie_us;
  double latency_us = constants.p2p_base_us;
  if (setup.collective == Collective::alltoall) {
    if (setup.ranks_per_node > 1) latency_us += intra_node_us;
    if (setup.nodes > 1) latency_us += constants.p2p_net_us;
    const double intra_seconds_per_byte = (ranks_per_node - 1) / ranks / to_bytes_per_s(setup.intra_node_bus_GBps);
    const double net_seconds_per_byte =
        setup.nodes > 1 ? (ranks - ranks_per_node) / ranks / to_bytes_per_s(setup.nic_share_per_rank_GBps) : 0;
    out.add_term(linear_term(Algorithm::p2p, Protocol::simple, latency_us * 1e-6,
                             std::max(intra_seconds_per_byte, net_seconds_per_byte), 1.0));
  } else {  // sendrecv: each rank sends the size to the next; across nodes the boundary rank uses its NIC share
    latency_us += setup.nodes > 1 ? constants.p2p_net_us : intra_node_us;
    const double bus_GBps = setup.nodes > 1 ? std::min(setup.nic_share_per_rank_GBps, setup.intra_node_bus_GBps)
                                            : setup.intra_node_bus_GBps;
    out.add_term(linear_term(Algorithm::p2p, Protocol::simple, latency_us * 1e-6, 1.0, to_bytes_per_s(bus_GBps)));
  }
}

struct Candidate {
  Algorithm algorithm;
  Protocol protocol;
  double time_s;
  double latency_s;
  bool calibrated;
};

bool has_bandwidth(const TierCalibration& calibration) {
  return calibration.bus_GBps > 0 || !calibration.bus_GBps_by_ranks.empty();
}

bool is_calibrated(const TierCalibration& calibration) {
  return has_bandwidth(calibration) || calibration.latency_us > 0 || calibration.step_latency_us > 0;
}

// The calibration of the tier the group runs on: across nodes or inside one.
const TierCalibration& tier_calibration(const Fabric& fabric, const Setup& setup) {
  if (setup.nodes > 1) return fabric.inter;
  return setup.measured != nullptr && !is_calibrated(fabric.intra) ? *setup.measured : fabric.intra;
}

// A calibrated tier replaces the model's bandwidth and/or latency for the fastest candidate.
void apply_calibration(const Fabric& fabric, const Setup& setup, double bytes, Candidate& fastest) {
  const TierCalibration& calibration = tier_calibration(fabric, setup);
  if (!is_calibrated(calibration)) return;
  const bool allreduce = setup.collective == Collective::allreduce;
  const double steps = (allreduce ? 2.0 : 1.0) * static_cast<double>(setup.ranks - 1);
  const double latency_s = (calibration.latency_us > 0 || calibration.step_latency_us > 0)
                               ? (calibration.latency_us + steps * calibration.step_latency_us) * 1e-6
                               : fastest.latency_s;
  double transfer_s = fastest.time_s - fastest.latency_s;
  if (has_bandwidth(calibration)) {
    double bus_GBps = calibrated_bus_GBps(calibration, setup.ranks);
    // The calibration measured packed groups: a group with a smaller NIC share gets proportionally less.
    if (setup.nodes > 1 && setup.nic_share_per_rank_packed_GBps > 0)
      bus_GBps *= std::min(1.0, setup.nic_share_per_rank_GBps / setup.nic_share_per_rank_packed_GBps);
    transfer_s = bytes * setup.busbw_factor / to_bytes_per_s(bus_GBps);
  }
  fastest.latency_s = latency_s;
  fastest.time_s = latency_s + transfer_s;
  fastest.calibrated = true;
}

}  // namespace

GroupCollective::GroupCollective(const Fabric& fabric, Collective collective, const GroupPlacement& group)
    : fabric_(&fabric), setup_(make_setup(fabric, collective, group)) {
  add_terms();
}

GroupCollective::GroupCollective(const GroupCollective& same_group, Collective collective)
    : fabric_(same_group.fabric_), setup_(same_group.setup_) {
  setup_.collective = collective;
  setup_.busbw_factor = busbw_factor(collective, setup_.ranks);
  set_measured(*fabric_, setup_);
  add_terms();
}

void GroupCollective::add_terms() {
  if (setup_.ranks <= 1) return;  // one rank: nothing moves
  if (setup_.collective == Collective::alltoall || setup_.collective == Collective::sendrecv) {
    add_p2p_term(setup_, *this);
  } else {
    add_ring_terms(setup_, *this);
    add_tree_terms(setup_, *this);
    add_nvls_term(*fabric_, setup_, *this);
    add_hierarchical_term(*fabric_, setup_, *this);
  }
}

// Inline: this is the innermost arithmetic of every collective a search prices.
inline double GroupCollective::term_time_s(int i, double bytes, double* latency_s) const {
  const Term& term = terms_[i];
  const double fixed_s = bytes >= term.large_from_bytes ? term.large_latency_s : term.latency_s;
  const double seconds_per_byte =
      term.tree_corrected ? term.seconds_per_byte / tree_correction(*setup_.constants, bytes, term.protocol)
                          : term.seconds_per_byte;
  if (latency_s) *latency_s = fixed_s;
  return fixed_s + bytes * seconds_per_byte;
}

double GroupCollective::time_s(double bytes) const {
  validate_bytes(bytes);
  if (term_count_ == 0) return 0;
  int fastest = 0;
  double fastest_s = 0, fastest_latency_s = 0;
  for (int i = 0; i < term_count_; ++i) {
    double term_latency_s = 0;
    const double term_s = term_time_s(i, bytes, &term_latency_s);
    if (i == 0 || term_s < fastest_s) {
      fastest = i;
      fastest_s = term_s;
      fastest_latency_s = term_latency_s;
    }
  }
  if (!is_calibrated(tier_calibration(*fabric_, setup_))) return fastest_s;
  Candidate candidate{terms_[fastest].algorithm, terms_[fastest].protocol, fastest_s, fastest_latency_s, false};
  apply_calibration(*fabric_, setup_, bytes, candidate);
  return candidate.time_s;
}

namespace {

// Every candidate at `bytes`, fastest first (stable), the fastest calibrated; `setup` gets the group's setup.
std::vector<Candidate> evaluate(const Fabric& fabric, Collective collective, double bytes,
                                const GroupPlacement& placement, Setup& setup) {
  validate_bytes(bytes);
  const GroupCollective group(fabric, collective, placement);
  setup = group.setup();
  setup.size_bytes = bytes;
  std::vector<Candidate> candidates;
  if (group.term_count() == 0) {
    candidates.push_back(Candidate{Algorithm::local, Protocol::simple, 0, 0, false});
    return candidates;
  }
  for (int i = 0; i < group.term_count(); ++i) {
    double latency_s = 0;
    const double time = group.term_time_s(i, bytes, &latency_s);
    candidates.push_back(Candidate{group.term(i).algorithm, group.term(i).protocol, time, latency_s, false});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.time_s < b.time_s; });
  apply_calibration(fabric, setup, bytes, candidates.front());
  return candidates;
}

std::string algorithm_name(const Setup& setup, const Candidate& candidate) {
  switch (candidate.algorithm) {
    case Algorithm::ring: return setup.nodes > 1 ? "ring (across nodes)" : "ring";
    case Algorithm::tree: return setup.nodes > 1 ? "tree (double binary across nodes)" : "tree (chain)";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvls_tree: return "nvls-tree";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::p2p: return setup.collective == Collective::alltoall ? "p2p (all peers at once)" : "p2p";
    case Algorithm::local: return "none (one rank)";
  }
  return "?";
}

std::string bottleneck(const Fabric& fabric, const Setup& setup, const Candidate& candidate) {
  if (candidate.algorithm == Algorithm::local) return "a single rank moves nothing";
  const double transfer_s = candidate.time_s - candidate.latency_s;
  const std::string regime = candidate.latency_s >= transfer_s ? "latency-bound (fixed cost >= transfer time)"
                                                               : "bandwidth-bound (transfer time > fixed cost)";
  std::string where;
  if (setup.nodes > 1)
    where = fmt::format("{} nodes x {} ranks, {:.1f} GB/s NIC share per rank ({}each NIC moving {:.2f} of its line "
                        "rate, net_efficiency)",
                        setup.nodes, setup.ranks_per_node, setup.nic_share_per_rank_GBps,
                        setup.concurrent_groups > 1
                            ? fmt::format("{} groups share each node's NICs, ", setup.concurrent_groups)
                            : "",
                        setup.constants->net_efficiency);
  else
    where = fmt::format("one node, {} ({:.1f} GB/s per GPU as {} rates it)",
                        setup.intra_node_nvlink ? fmt::format("{} domain", scaleup_name(fabric)) : "PCIe",
                        setup.intra_node_bus_GBps, collective_library(fabric));
  return regime + "; " + where;
}

CollectiveCost describe(const Fabric& fabric, const Setup& setup, const Candidate& candidate, bool fastest) {
  CollectiveCost cost;
  cost.time_s = candidate.time_s;
  cost.algbw_GBps = candidate.time_s > 0 ? setup.size_bytes / candidate.time_s / 1e9 : 0;
  cost.busbw_GBps = cost.algbw_GBps * setup.busbw_factor;
  cost.algorithm = algorithm_name(setup, candidate);
  cost.protocol = candidate.algorithm == Algorithm::local ? "" : protocol_name(candidate.protocol);
  if (candidate.calibrated) {
    const TierCalibration& calibration = tier_calibration(fabric, setup);
    const bool measured = &calibration == setup.measured;
    cost.algorithm += measured ? " (measured)" : " (calibrated)";
    std::string sources;
    for (const std::string& source : fabric.calibration_sources) sources += (sources.empty() ? "" : ", ") + source;
    if (measured) sources = fabric.gpu + " nodes (data/comm.json measured_intra_node)";
    cost.reason = fmt::format("{}-node tier calibrated{}: latency {:.1f} us + {:.2f} us/step, busbw {:.1f} GB/s; {}",
                              setup.nodes > 1 ? "inter" : "intra", sources.empty() ? "" : " from " + sources,
                              calibration.latency_us, calibration.step_latency_us, calibration.bus_GBps,
                              bottleneck(fabric, setup, candidate));
  } else {
    cost.reason =
        (fastest ? fmt::format("fastest of the algorithm/protocol pairs {} would consider; ",
                               collective_library(fabric))
                 : std::string()) +
        bottleneck(fabric, setup, candidate);
  }
  return cost;
}

}  // namespace

}  // namespace comm

std::vector<CollectiveCost> collective_candidates(const Fabric& fabric, Collective collective, double bytes,
                                                  const GroupPlacement& group) {
  comm::Setup setup;
  const auto candidates = comm::evaluate(fabric, collective, bytes, group, setup);
  std::vector<CollectiveCost> costs;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    costs.push_back(comm::describe(fabric, setup, candidates[i], i == 0));
  return costs;
}

CollectiveCost collective_cost(const Fabric& fabric, Collective collective, double bytes, const GroupPlacement& group) {
  comm::Setup setup;
  const auto candidates = comm::evaluate(fabric, collective, bytes, group, setup);
  return comm::describe(fabric, setup, candidates.front(), true);
}

double collective_time_s(const Fabric& fabric, Collective collective, double bytes, const GroupPlacement& group) {
  return comm::GroupCollective(fabric, collective, group).time_s(bytes);
}

}  // namespace gpuplan
