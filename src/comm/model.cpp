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

const char* to_string(Collective c) {
  switch (c) {
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
  std::string s;
  for (char ch : name) {
    if (ch == '_' || ch == '-' || ch == ' ') continue;
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (s == "allreduce" || s == "ar") return Collective::allreduce;
  if (s == "allgather" || s == "ag") return Collective::allgather;
  if (s == "reducescatter" || s == "rs") return Collective::reducescatter;
  if (s == "alltoall" || s == "a2a") return Collective::alltoall;
  if (s == "broadcast" || s == "bcast") return Collective::broadcast;
  if (s == "sendrecv" || s == "p2p") return Collective::sendrecv;
  return std::nullopt;
}

double busbw_factor(Collective collective, std::int64_t ranks) {
  const double n = static_cast<double>(std::max<std::int64_t>(ranks, 1));
  switch (collective) {
    case Collective::allreduce: return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reducescatter:
    case Collective::alltoall: return (n - 1) / n;
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
int log2i(std::int64_t v) { return v > 1 ? static_cast<int>(std::bit_width(static_cast<std::uint64_t>(v))) - 1 : 0; }

void validate_bytes(double bytes) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw InputError("--size", fmt::format("{}", bytes), "a finite number of bytes >= 0");
}

void validate_group(const Fabric& f, const GroupPlacement& g) {
  if (g.ranks < 1) throw InputError("--ranks", std::to_string(g.ranks), "a whole number >= 1");
  if (g.ranks_per_node < 1)
    throw InputError("--ranks-per-node", std::to_string(g.ranks_per_node), "a whole number >= 1");
  if (g.concurrent_groups_per_node < 1)
    throw InputError("concurrent groups per node", std::to_string(g.concurrent_groups_per_node),
                     "a whole number >= 1");
  const int gpn = std::max(f.gpus_per_node, 1);
  if (g.ranks_per_node > gpn && g.ranks > gpn)
    throw InputError("--ranks-per-node", std::to_string(g.ranks_per_node),
                     fmt::format("at most {} ({} has {} GPUs per node)", gpn, f.name, gpn));
  const std::int64_t rpn = std::min(g.ranks, std::min<std::int64_t>(g.ranks_per_node, gpn));
  const std::int64_t k = (g.ranks + rpn - 1) / rpn;
  if (k > std::max(f.nodes, 1))
    throw InputError("--ranks", std::to_string(g.ranks),
                     fmt::format("at most {} with {} ranks per node on {} ({} node{} of {} GPUs)",
                                 static_cast<std::int64_t>(std::max(f.nodes, 1)) * rpn, rpn, f.name, f.nodes,
                                 f.nodes == 1 ? "" : "s", gpn));
}

Setup make_setup(const Fabric& f, Collective coll, const GroupPlacement& g) {
  validate_group(f, g);
  Setup s;
  static const CommConstants* const builtin = builtin_comm_constants().get();  // kept alive by its static owner
  s.C = f.constants ? f.constants.get() : builtin;
  s.A = &s.C->for_sm(f.sm_version);
  s.coll = coll;
  const int gpn = std::max(f.gpus_per_node, 1);
  s.n = g.ranks;
  s.rpn = std::min(g.ranks, std::min<std::int64_t>(g.ranks_per_node, gpn));
  s.k = (s.n + s.rpn - 1) / s.rpn;
  s.conc = g.concurrent_groups_per_node;
  s.cls = s.k <= 1 ? 0 : (s.k == 2 ? 1 : 2);
  s.factor = busbw_factor(coll, s.n);
  const double pcie = f.pcie_per_gpu_GBps > 0 ? f.pcie_per_gpu_GBps : s.C->pcie_fallback_GBps;
  s.intra_nvlink = f.domain_size >= s.rpn && f.domain_per_gpu_GBps > 0 && f.domain_size > 1;
  if (s.rpn <= 1) {
    s.intra_nvlink = f.domain_per_gpu_GBps > 0 && f.domain_size > 1;
    s.intra_bus = s.intra_nvlink ? f.domain_per_gpu_GBps : pcie;
  } else {
    s.intra_bus = s.intra_nvlink ? f.domain_per_gpu_GBps : pcie;
  }
  s.intra_hw = s.intra_nvlink ? &s.C->hw_latency_nvlink_us : &s.C->hw_latency_pcie_us;
  if (s.k > 1) {
    const double node = f.nic_per_gpu_GBps * gpn;
    const double one_nic = f.nics_per_node > 0 ? node / f.nics_per_node : f.nic_per_gpu_GBps;
    s.net_rank = std::min(one_nic, node / static_cast<double>(s.conc * s.rpn));
    s.net_rank_packed = std::min(one_nic, node / static_cast<double>(gpn));
    if (!(s.net_rank > 0))
      throw InputError("--nodes", std::to_string(f.nodes),
                       fmt::format("1: {} has no scale-out bandwidth (nic_per_gpu_GBps is 0)", f.name));
  }
  return s;
}

double gbps(double GBps) { return GBps * 1e9; }

// A term whose time is latency + S x per_byte / bytes_per_s at every size.
Term linear_term(Algorithm algo, Protocol proto, double latency_s, double per_byte, double bytes_per_s) {
  return Term{algo, proto, latency_s, per_byte / bytes_per_s, kNever, latency_s, false};
}

int channels(const Setup& s, double bus, bool inter) {
  const double rung = inter ? s.A->channel_rung_inter_GBps : s.A->channel_rung_intra_GBps;
  const double ratio = bus / rung;
  const double whole = ratio > 0 ? std::min(ratio, 1e6) : 0;  // truncation is floor for a positive ratio
  return s.C->channel_duplication * std::max(1, static_cast<int>(whole));
}

// Ring: every collective but AllToAll and SendRecv.
void ring(const Setup& s, GroupCollective& out) {
  const auto& C = *s.C;
  const std::int64_t n = s.n, k = s.k;
  const bool ar = s.coll == Collective::allreduce;
  const std::int64_t nsteps = ar ? 2 * (n - 1)
                              : (s.coll == Collective::allgather || s.coll == Collective::reducescatter) ? n - 1 : n;
  const std::int64_t ninter = k > 1 ? (ar ? 2 * (k - 1) : k - 1) : 0;
  const double bus = k > 1 ? std::min(s.intra_bus, static_cast<double>(s.rpn) * s.net_rank) : s.intra_bus;
  const int nch = channels(s, bus, k > 1);
  const bool ll128_ok = s.intra_nvlink || s.rpn <= 1;
  for (const Protocol p : kAllProtocols) {
    if (p == Protocol::ll128 && !ll128_ok) continue;
    double intra_lat = (*s.intra_hw)(Algorithm::ring, p);
    const double overhead = (p == Protocol::simple ? C.net_overhead_simple_factor : 1.0) * C.net_overhead_intel_us;
    if (k > 1) intra_lat = std::max(intra_lat, overhead);
    const double inter_lat =
        C.hw_latency_net_us(Algorithm::ring, p) + (p == Protocol::simple ? 2 : 1) * C.latency_inter_us;
    const double lat = C.base_latency_us(Algorithm::ring, p) + static_cast<double>(nsteps - ninter) * intra_lat +
                       static_cast<double>(ninter) * inter_lat;
    double b = bus;
    if (p == Protocol::ll) b = std::min(s.A->ll_max_GBps[s.cls], C.ll_fraction * bus);
    if (p == Protocol::ll128) b = std::min(C.ll128_fraction * bus, nch * s.A->per_channel_ring_ll128_GBps);
    Term t = linear_term(Algorithm::ring, p, lat * 1e-6, s.factor, gbps(b));
    if (ar && k > 1 && p == Protocol::simple) {  // NCCL: from 64 bytes per channel and rank on
      t.large_from_bytes = 64.0 * static_cast<double>(nch) * static_cast<double>(n);
      t.large_latency_s =
          lat * (s.A->min_sm >= 80 ? C.ring_simple_multinode_factor : C.ring_simple_multinode_factor_pre_ampere) * 1e-6;
    }
    out.add(t);
  }
}

double tree_correction(const CommConstants& C, double bytes, Protocol p) {
  const auto& t = C.tree_correction[index(p)];
  const double units = std::floor(bytes / 64.0);
  if (units < 1) return t.front();
  const int idx = log2i(static_cast<std::int64_t>(units));
  return idx < static_cast<int>(t.size()) ? t[static_cast<std::size_t>(idx)] : 1.0;
}

// NCCL Tree AllReduce: a chain inside each node, a double binary tree across nodes. algbw = busBw / 2.
void tree(const Setup& s, GroupCollective& out) {
  if (s.coll != Collective::allreduce) return;
  const auto& C = *s.C;
  double bus = s.intra_bus;
  // Across nodes every node sends and receives S once per direction (both trees together): algbw <= the group's
  // share of the node's NICs, i.e. busBw (= 2 algbw) <= 2 x rpn x per-rank share.
  if (s.k > 1) bus = std::min(bus, 2.0 * static_cast<double>(s.rpn) * s.net_rank) * C.tree_pattern_factor;
  const int nch = channels(s, bus, s.k > 1);
  const bool ll128_ok = s.intra_nvlink || s.rpn <= 1;
  for (const Protocol p : kAllProtocols) {
    if (p == Protocol::ll128 && !ll128_ok) continue;
    const double intra_lat = (*s.intra_hw)(Algorithm::tree, p);
    const double inter_lat =
        C.hw_latency_net_us(Algorithm::tree, p) + (p == Protocol::simple ? 2 : 1) * C.latency_inter_us;
    const double lat = C.base_latency_us(Algorithm::tree, p) +
                       2.0 * (static_cast<double>(s.rpn - 1) * intra_lat + log2i(s.k) * inter_lat);
    double b = 0;
    if (p == Protocol::simple) b = std::min(C.tree_fraction * bus, nch * s.A->per_channel_tree_GBps[s.cls]);
    if (p == Protocol::ll) b = std::min(bus / C.tree_ll_divisor, s.A->ll_max_GBps[s.cls]);
    if (p == Protocol::ll128)
      b = std::min(bus * (s.k == 1 ? C.tree_ll128_one_node : C.tree_ll128_multi_node),
                   nch * s.A->per_channel_tree_ll128_GBps[s.cls]);
    Term t = linear_term(Algorithm::tree, p, lat * 1e-6, 1.0, gbps(0.5 * b));  // algbw = half the (corrected) bus rate
    t.tree_corrected = true;
    out.add(t);
  }
}

bool nvls_capable(const Fabric& f, const Setup& s) {
  return f.nvswitch && f.sm_version >= 90 && s.A->nvls_efficiency > 0 && s.intra_nvlink && s.rpn >= 2 &&
         (s.coll == Collective::allreduce || s.coll == Collective::allgather ||
          s.coll == Collective::reducescatter);
}

// NVLS bus bandwidth inside one node of `rpn` ranks (nccl-tests busbw), NCCL's formula.
double nvls_bus(const Setup& s) {
  const double nch = s.C->nvls_channels;
  const double bw = s.intra_bus * s.A->nvls_efficiency * (nch - 1) / nch;
  if (s.coll == Collective::allreduce) return 2.0 * bw;
  return bw * static_cast<double>(s.rpn - 1) / static_cast<double>(s.rpn);
}

// NVLink SHARP inside one node; NVLSTree (NVLS inside, trees across) for AllReduce over several nodes.
void nvls(const Fabric& f, const Setup& s, GroupCollective& out) {
  if (!nvls_capable(f, s)) return;
  const auto& C = *s.C;
  if (s.k == 1) {
    const double latency_s = (C.base_latency_us(Algorithm::nvls, Protocol::simple) +
                              C.hw_latency_nvlink_us(Algorithm::nvls, Protocol::simple)) * 1e-6;
    out.add(linear_term(Algorithm::nvls, Protocol::simple, latency_s, s.factor, gbps(nvls_bus(s))));
    return;
  }
  if (s.coll != Collective::allreduce) return;
  const double cap = C.nvls_channels * s.A->per_channel_nvls_tree_GBps[s.cls];
  if (!(cap > 0)) return;
  const double bus = std::min({nvls_bus(s), 2.0 * static_cast<double>(s.rpn) * s.net_rank, cap});
  const double inter_lat = C.hw_latency_net_us(Algorithm::nvls_tree, Protocol::simple) + 2 * C.latency_inter_us;
  const double latency_s = (C.base_latency_us(Algorithm::nvls_tree, Protocol::simple) +
                            C.hw_latency_nvlink_us(Algorithm::nvls_tree, Protocol::simple) +
                            2.0 * log2i(s.k) * inter_lat) * 1e-6;
  out.add(linear_term(Algorithm::nvls_tree, Protocol::simple, latency_s, s.factor, gbps(bus)));
}

// Hierarchical across nodes: reduce-scatter inside the node, the 1/rpn shard across nodes over each rank's NIC
// share, all-gather inside the node; the phases pipelined by chunks, so the slowest phase sets the rate.
void hierarchical(const Fabric& f, const Setup& s, GroupCollective& out) {
  if (s.k <= 1 || s.rpn <= 1) return;
  if (s.coll != Collective::allreduce && s.coll != Collective::allgather && s.coll != Collective::reducescatter)
    return;
  const auto& C = *s.C;
  const double rpn = static_cast<double>(s.rpn), k = static_cast<double>(s.k);
  const bool ar = s.coll == Collective::allreduce;
  double intra_bus = s.intra_bus;
  if (nvls_capable(f, s)) intra_bus = std::max(intra_bus, nvls_bus(s));  // nvls_bus reads rpn only, not k
  const double intra_share = (ar ? 2.0 : 1.0) * (rpn - 1) / rpn;   // of S, per rank, over NVLink
  const double net_share = (ar ? 2.0 : 1.0) * (k - 1) / k / rpn;   // of S, per rank, over its NIC share
  const double per_byte = std::max(intra_share / gbps(intra_bus), net_share / gbps(s.net_rank));
  const double intra_steps = (ar ? 2.0 : 1.0) * (rpn - 1), inter_steps = (ar ? 2.0 : 1.0) * (k - 1);
  const double lat = C.base_latency_us(Algorithm::ring, Protocol::simple) +
                     intra_steps * (*s.intra_hw)(Algorithm::ring, Protocol::simple) +
                     inter_steps * (C.hw_latency_net_us(Algorithm::ring, Protocol::simple) + 2 * C.latency_inter_us);
  out.add(linear_term(Algorithm::hierarchical, Protocol::simple, lat * 1e-6, per_byte, 1.0));
}

// AllToAll and SendRecv are point-to-point operations in NCCL (no tuning model): all peers at once.
void p2p(const Setup& s, GroupCollective& out) {
  const auto& C = *s.C;
  const double n = static_cast<double>(s.n), rpn = static_cast<double>(s.rpn);
  double lat = C.p2p_base_us;
  if (s.coll == Collective::alltoall) {
    if (s.rpn > 1) lat += s.intra_nvlink ? C.p2p_nvlink_us : C.p2p_pcie_us;
    if (s.k > 1) lat += C.p2p_net_us;
    const double intra = (rpn - 1) / n / gbps(s.intra_bus);
    const double net = s.k > 1 ? (n - rpn) / n / gbps(s.net_rank) : 0;
    out.add(linear_term(Algorithm::p2p, Protocol::simple, lat * 1e-6, std::max(intra, net), 1.0));
  } else {   // sendrecv: each rank sends S to the next; across nodes the boundary rank uses its NIC share
    lat += s.k > 1 ? C.p2p_net_us : (s.intra_nvlink ? C.p2p_nvlink_us : C.p2p_pcie_us);
    out.add(linear_term(Algorithm::p2p, Protocol::simple, lat * 1e-6, 1.0,
                        gbps(s.k > 1 ? std::min(s.net_rank, s.intra_bus) : s.intra_bus)));
  }
}

struct Candidate {
  Algorithm algo;
  Protocol proto;
  double time_s;
  double latency_s;
  bool calibrated;
};

// A calibrated tier replaces the model's bandwidth and/or latency for the fastest candidate.
void apply_calibration(const Fabric& f, const Setup& s, double bytes, Candidate& best) {
  const TierCalibration& cal = s.k > 1 ? f.inter : f.intra;
  if (!(cal.bus_GBps > 0) && !(cal.latency_us > 0) && !(cal.step_latency_us > 0)) return;
  const bool ar = s.coll == Collective::allreduce;
  const double steps = (ar ? 2.0 : 1.0) * static_cast<double>(s.n - 1);
  const double lat_s = (cal.latency_us > 0 || cal.step_latency_us > 0)
                           ? (cal.latency_us + steps * cal.step_latency_us) * 1e-6
                           : best.latency_s;
  double bw_time = best.time_s - best.latency_s;
  if (cal.bus_GBps > 0) {
    double bus = cal.bus_GBps;
    if (s.k > 1 && s.net_rank_packed > 0) bus *= std::min(1.0, s.net_rank / s.net_rank_packed);
    bw_time = bytes * s.factor / gbps(bus);
  }
  best.latency_s = lat_s;
  best.time_s = lat_s + bw_time;
  best.calibrated = true;
}

}  // namespace

GroupCollective::GroupCollective(const Fabric& fabric, Collective collective, const GroupPlacement& group)
    : f_(&fabric), s_(make_setup(fabric, collective, group)) {
  add_terms();
}

GroupCollective::GroupCollective(const GroupCollective& same_group, Collective collective)
    : f_(same_group.f_), s_(same_group.s_) {
  s_.coll = collective;
  s_.factor = busbw_factor(collective, s_.n);
  add_terms();
}

void GroupCollective::add_terms() {
  if (s_.n <= 1) return;  // one rank: nothing moves
  if (s_.coll == Collective::alltoall || s_.coll == Collective::sendrecv) {
    p2p(s_, *this);
  } else {
    ring(s_, *this);
    tree(s_, *this);
    nvls(*f_, s_, *this);
    hierarchical(*f_, s_, *this);
  }
}

double GroupCollective::term_time_s(int i, double bytes, double* latency_s) const {
  const Term& t = terms_[i];
  const double lat = bytes >= t.large_from_bytes ? t.large_latency_s : t.latency_s;
  const double per_byte = t.tree_corrected ? t.seconds_per_byte / tree_correction(*s_.C, bytes, t.proto) : t.seconds_per_byte;
  if (latency_s) *latency_s = lat;
  return lat + bytes * per_byte;
}

double GroupCollective::time_s(double bytes) const {
  validate_bytes(bytes);
  if (n_ == 0) return 0;
  int best = 0;
  double best_t = 0, best_lat = 0;
  for (int i = 0; i < n_; ++i) {
    double lat = 0;
    const double time = term_time_s(i, bytes, &lat);
    if (i == 0 || time < best_t) {
      best = i;
      best_t = time;
      best_lat = lat;
    }
  }
  const TierCalibration& cal = s_.k > 1 ? f_->inter : f_->intra;
  if (!(cal.bus_GBps > 0) && !(cal.latency_us > 0) && !(cal.step_latency_us > 0)) return best_t;
  Candidate c{terms_[best].algo, terms_[best].proto, best_t, best_lat, false};
  apply_calibration(*f_, s_, bytes, c);
  return c.time_s;
}

namespace {

// Every candidate at `bytes`, fastest first (stable), the fastest calibrated; `setup` gets the group's setup.
std::vector<Candidate> evaluate(const Fabric& f, Collective coll, double bytes, const GroupPlacement& g, Setup& setup) {
  validate_bytes(bytes);
  const GroupCollective group(f, coll, g);
  setup = group.setup();
  setup.S = bytes;
  std::vector<Candidate> out;
  if (group.size() == 0) {
    out.push_back(Candidate{Algorithm::local, Protocol::simple, 0, 0, false});
    return out;
  }
  for (int i = 0; i < group.size(); ++i) {
    double lat = 0;
    const double t = group.term_time_s(i, bytes, &lat);
    out.push_back(Candidate{group.term(i).algo, group.term(i).proto, t, lat, false});
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.time_s < b.time_s; });
  apply_calibration(f, setup, bytes, out.front());
  return out;
}

std::string algo_name(const Setup& s, const Candidate& c) {
  switch (c.algo) {
    case Algorithm::ring: return s.k > 1 ? "ring (across nodes)" : "ring";
    case Algorithm::tree: return s.k > 1 ? "tree (double binary across nodes)" : "tree (chain)";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvls_tree: return "nvls-tree";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::p2p: return s.coll == Collective::alltoall ? "p2p (all peers at once)" : "p2p";
    case Algorithm::local: return "none (one rank)";
  }
  return "?";
}

std::string bottleneck(const Setup& s, const Candidate& c) {
  if (c.algo == Algorithm::local) return "a single rank moves nothing";
  const double bw_s = c.time_s - c.latency_s;
  const std::string regime = c.latency_s >= bw_s ? "latency-bound (fixed cost >= transfer time)"
                                                 : "bandwidth-bound (transfer time > fixed cost)";
  std::string where;
  if (s.k > 1)
    where = fmt::format("{} nodes x {} ranks, {:.1f} GB/s NIC share per rank{}", s.k, s.rpn, s.net_rank,
                        s.conc > 1 ? fmt::format(" ({} groups share each node's NICs)", s.conc) : "");
  else
    where = fmt::format("one node, {} ({:.1f} GB/s per GPU as NCCL rates it)",
                        s.intra_nvlink ? "NVLink domain" : "PCIe", s.intra_bus);
  return regime + "; " + where;
}

CollectiveCost describe(const Fabric& f, const Setup& s, const Candidate& c, bool best) {
  CollectiveCost r;
  r.time_s = c.time_s;
  r.algbw_GBps = c.time_s > 0 ? s.S / c.time_s / 1e9 : 0;
  r.busbw_GBps = r.algbw_GBps * s.factor;
  r.algorithm = algo_name(s, c);
  r.protocol = c.algo == Algorithm::local ? "" : protocol_name(c.proto);
  if (c.calibrated) {
    r.algorithm += " (calibrated)";
    const TierCalibration& cal = s.k > 1 ? f.inter : f.intra;
    std::string srcs;
    for (const auto& x : f.calibration_sources) srcs += (srcs.empty() ? "" : ", ") + x;
    r.reason = fmt::format("{}-node tier calibrated{}: latency {:.1f} us + {:.2f} us/step, busbw {:.1f} GB/s; {}",
                           s.k > 1 ? "inter" : "intra", srcs.empty() ? "" : " from " + srcs, cal.latency_us,
                           cal.step_latency_us, cal.bus_GBps, bottleneck(s, c));
  } else {
    r.reason = (best ? std::string("fastest of the algorithm/protocol pairs NCCL would consider; ") : std::string()) +
               bottleneck(s, c);
  }
  return r;
}

}  // namespace

}  // namespace comm

std::vector<CollectiveCost> collective_candidates(const Fabric& fabric, Collective collective, double bytes,
                                                  const GroupPlacement& group) {
  comm::Setup s;
  const auto cands = comm::evaluate(fabric, collective, bytes, group, s);
  std::vector<CollectiveCost> out;
  for (std::size_t i = 0; i < cands.size(); ++i) out.push_back(comm::describe(fabric, s, cands[i], i == 0));
  return out;
}

CollectiveCost collective_cost(const Fabric& fabric, Collective collective, double bytes, const GroupPlacement& group) {
  comm::Setup s;
  const auto cands = comm::evaluate(fabric, collective, bytes, group, s);
  return comm::describe(fabric, s, cands.front(), true);
}

double collective_time_s(const Fabric& fabric, Collective collective, double bytes, const GroupPlacement& group) {
  return comm::GroupCollective(fabric, collective, group).time_s(bytes);
}

}  // namespace gpuplan
