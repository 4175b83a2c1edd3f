// One collective on one placed group, set up once (placement, algorithms, protocols, their latencies and
// bandwidths) and then priced at any size for a few dozen instructions. A step-time estimate prices the same
// groups at many sizes (per stage, per bucket):
// collective_time_s(fabric, collective, bytes, group) == GroupCollective(fabric, collective, group).time_s(bytes).
#pragma once

#include <cstdint>
#include <limits>

#include "comm/constants.hpp"
#include "gpuplan/comm.hpp"

namespace gpuplan::comm {

// Everything about the placement the algorithms need.
struct Setup {
  const CommConstants* constants = nullptr;
  const CommArchConstants* arch = nullptr;   // the constants of the GPUs' architecture
  Collective collective = Collective::allreduce;
  double size_bytes = 0;                     // the size being priced (set per call)
  std::int64_t ranks = 1;
  std::int64_t ranks_per_node = 1;           // on each node the group spans
  std::int64_t nodes = 1;                    // nodes the group spans
  std::int64_t concurrent_groups = 1;        // such groups on each node, sharing its NICs
  int node_class = 0;                        // index of NCCL's per-architecture caps: 0 one node, 1 two, 2 more
  bool intra_node_nvlink = false;            // the node-local ranks share the NVLink/xGMI domain
  double intra_node_bus_GBps = 0;            // per-rank ring bandwidth inside the node (NCCL-rated)
  double nic_share_per_rank_GBps = 0;        // per-rank share of the NICs
  double nic_share_per_rank_packed_GBps = 0;  // the same for a packed group alone on its nodes (calibration reference)
  const AlgoProtoTable* intra_node_hw_latency_us = nullptr;  // NVLink's or PCIe's
  double busbw_factor = 1;                   // nccl-tests busbw factor
  const TierCalibration* measured = nullptr;  // this collective measured on these GPUs inside one node
};

// One (algorithm, protocol) pair: t(bytes) = latency + bytes x seconds_per_byte / (tree ? tree correction : 1),
// with the ring's multi-node Simple latency factor applying from a size on (NCCL's tuning model,
// src/graph/tuning.cc).
struct Term {
  Algorithm algorithm;
  Protocol protocol;
  double latency_s;
  double seconds_per_byte;
  double large_from_bytes;        // from this size on the latency is large_latency_s
  double large_latency_s;
  bool tree_corrected;
};

class GroupCollective {
 public:
  // Throws InputError when the group does not fit the fabric.
  GroupCollective(const Fabric& fabric, Collective collective, const GroupPlacement& group);
  // Another collective on the group of `same_group` (its placement set up already).
  GroupCollective(const GroupCollective& same_group, Collective collective);
  // The fastest pair's time at `bytes` (nccl-tests' size), calibration applied; throws InputError for a size that
  // is not a finite number >= 0.
  double time_s(double bytes) const;

  const Setup& setup() const { return setup_; }
  int term_count() const { return term_count_; }
  const Term& term(int i) const { return terms_[i]; }
  void add_term(const Term& term) {
    if (term_count_ < kMaxTerms) terms_[term_count_++] = term;
  }
  // The time of term `i` at `bytes`, uncalibrated, and its latency part.
  double term_time_s(int i, double bytes, double* latency_s = nullptr) const;

 private:
  void add_terms();

  static constexpr int kMaxTerms = 16;
  const Fabric* fabric_;
  Setup setup_;
  Term terms_[kMaxTerms];  // only the first term_count_ are set
  int term_count_ = 0;
};

}  // namespace gpuplan::comm
