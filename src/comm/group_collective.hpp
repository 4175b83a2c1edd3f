// One collective on one placed group, set up once (placement, algorithms, protocols, their latencies and
// bandwidths) and then priced at any size for a few dozen instructions. A step-time estimate prices the same
// groups at many sizes (per stage, per bucket); collective_time_s(f, c, S, g) == GroupCollective(f, c, g).time_s(S).
#pragma once

#include <cstdint>
#include <limits>

#include "comm/constants.hpp"
#include "gpuplan/comm.hpp"

namespace gpuplan::comm {

// Everything about the placement the algorithms need.
struct Setup {
  const CommConstants* C = nullptr;
  const CommArchConstants* A = nullptr;
  Collective coll = Collective::allreduce;
  double S = 0;                   // the size being priced (set per call)
  std::int64_t n = 1, rpn = 1, k = 1, conc = 1;
  int cls = 0;                    // NCCL per-architecture caps index: 1 node / 2 nodes / 4+ nodes
  bool intra_nvlink = false;      // the node-local ranks share the NVLink/xGMI domain
  double intra_bus = 0;           // per-rank ring bandwidth inside the node, GB/s (NCCL-rated)
  double net_rank = 0;            // per-rank share of the NICs, GB/s
  double net_rank_packed = 0;     // the same for a packed group alone on its nodes (calibration reference)
  const AlgoProtoTable* intra_hw = nullptr;
  double factor = 1;              // nccl-tests busbw factor
};

// One (algorithm, protocol) pair: t(S) = latency + S x seconds_per_byte / (tree ? tree correction of S : 1),
// with the ring's multi-node Simple latency factor applying from a size on (NCCL's tuning model,
// src/graph/tuning.cc).
struct Term {
  Algorithm algo;
  Protocol proto;
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

  const Setup& setup() const { return s_; }
  int size() const { return n_; }
  const Term& term(int i) const { return terms_[i]; }
  void add(const Term& t) {
    if (n_ < kCapacity) terms_[n_++] = t;
  }
  // The time of term `i` at `bytes`, uncalibrated, and its latency part.
  double term_time_s(int i, double bytes, double* latency_s = nullptr) const;

 private:
  void add_terms();

  static constexpr int kCapacity = 16;
  const Fabric* f_;
  Setup s_;
  Term terms_[kCapacity];  // only the first n_ are set
  int n_ = 0;
};

}  // namespace gpuplan::comm
