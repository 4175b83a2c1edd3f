// The communication of one decoder layer and of the pipeline for one microbatch, priced the same way by the step
// model and by the search's step floor (perf/step_floor.hpp).
#pragma once

#include <algorithm>

#include "gpuplan/estimate.hpp"
#include "model/param_parts.hpp"
#include "perf/layer_cost.hpp"
#include "perf/moe_routing.hpp"

namespace gpuplan::perf {

// A microbatch as the layer costs see it: tokens on this rank, widths, element sizes.
MicrobatchShape microbatch_shape(const EstimateInputs& in, const Layout& layout);

struct LayerComm {
  double tp_forward_s = 0;     // the TP collectives of one layer's forward, each waited for
  double tp_backward_s = 0;    // the backward's collectives that the next GEMM waits for
  double tp_backward_async_s = 0;   // the backward's collectives issued beside a GEMM (async_op=True)
  double cp_hop_s = 0;         // one ring step's K/V chunk to the next CP rank (p2p, and a2a+p2p's ring)
  double cp_ring_ranks = 0;    // ranks of that ring (cp, or cp / cp_a2a); 0: no ring
  double cp_forward_s = 0;     // the CP collectives nothing hides (a2a, all_gather, a2a+p2p's all-to-alls)
  double cp_backward_s = 0;
  // A MoE layer's TP collectives: a dense layer's, less the dense MLP's gather and reduce-scatter where it has no
  // shared experts (the token dispatcher moves its tokens instead, in ep_per_layer_s).
  double tp_moe_forward_s = 0, tp_moe_backward_s = 0, tp_moe_backward_async_s = 0;
  // A MoE layer's token dispatcher, forward: the dispatch and combine all-to-alls over EP (and the routing
  // probabilities' where they travel with the tokens), and over expert-TP the gather of the tokens received and
  // the reduce-scatter of the experts' outputs.
  double ep_per_layer_s = 0;
};

// The local query, key + value and output of one layer on one rank (b x s/cp tokens, heads split over TP), in
// bytes; K and V as the attention kernel reads them, expanded to every query head under MicrobatchShape::repeat_kv.
struct AttentionBytes {
  double q = 0, kv = 0, o = 0;
};
AttentionBytes attention_bytes(const ModelConfig& m, const MicrobatchShape& s);

// The CP collectives Transformer Engine runs in one layer and waits for (dot_product_attention/
// context_parallel.py), by --cp-comm-type:
//   a2a: forward all-to-alls Q, K and V, then the output; backward the output's gradient (TE 2.8+: not the
//     output itself), then the query, key and value gradients;
//   all_gather: forward all-gathers K and V of the whole sequence; backward gathers them again and
//     reduce-scatters their gradients;
//   a2a+p2p: a2a's all-to-alls inside each group of cp_a2a ranks, the output sent again in backward.
// `group` is the all-to-all or all-gather group.
template <class Price>
void cp_collectives(const Layout& l, const AttentionBytes& b, const GroupPlacement& group, Price&& price,
                    LayerComm& out) {
  if (l.cp_comm == CpComm::all_gather) {
    const double cp = static_cast<double>(l.cp);
    const double gathered = cp * b.kv / 2;   // K, and V, of the whole sequence
    out.cp_forward_s = 2 * price(Collective::allgather, gathered, group);
    out.cp_backward_s = out.cp_forward_s + 2 * price(Collective::reducescatter, gathered, group);
    return;
  }
  const double qkv = price(Collective::alltoall, b.q, group) + 2 * price(Collective::alltoall, b.kv / 2, group);
  const double output = price(Collective::alltoall, b.o, group);
  out.cp_forward_s = qkv + output;
  out.cp_backward_s = output * (l.cp_comm == CpComm::a2a_p2p ? 2 : 1) + qkv;
}

// Context parallelism's exchanges in one layer: the ring's hop, and the collectives around the attention.
template <class Price>
void cp_layer_comm(const ModelConfig& m, const Layout& l, const MicrobatchShape& s, const GroupPlacement& cp_group,
                   Price&& price, LayerComm& out) {
  const AttentionBytes b = attention_bytes(m, s);
  const std::int64_t ring = l.cp_comm == CpComm::p2p ? l.cp : (l.cp_comm == CpComm::a2a_p2p ? l.cp / l.cp_a2a : 0);
  const std::int64_t node = cp_group.ranks_per_node * cp_group.concurrent_groups_per_node;   // GPUs of a node
  if (ring > 1) {
    // The ring moves in lockstep: when it spans nodes, a node-crossing hop paces every step. Under a2a+p2p its
    // ranks are cp_a2a apart (Megatron's hierarchical CP groups, parallel_state.create_hierarchical_groups).
    const std::int64_t stride = l.cp / ring;
    const std::int64_t ring_per_node = std::max<std::int64_t>(1, cp_group.ranks_per_node / stride);
    const GroupPlacement pair{2, ring_per_node >= ring ? 2 : 1, cp_group.concurrent_groups_per_node};
    out.cp_hop_s = price(Collective::sendrecv, b.kv, pair);
    out.cp_ring_ranks = static_cast<double>(ring);
  }
  if (l.cp_comm == CpComm::p2p) return;
  GroupPlacement group = cp_group;
  if (l.cp_comm == CpComm::a2a_p2p) {   // cp_a2a consecutive CP ranks
    group.ranks = l.cp_a2a;
    group.ranks_per_node = std::min(l.cp_a2a, cp_group.ranks_per_node);
    group.concurrent_groups_per_node = std::max<std::int64_t>(1, node / group.ranks_per_node);
  }
  cp_collectives(l, b, group, price, out);
}

// The TP collectives of one layer: its two column-parallel linears (qkv, fc1) and two row-parallel ones (out, fc2).
// Without sequence parallelism: forward all-reduces each row-parallel output, backward each column-parallel input
// gradient. With it, Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication (megatron/core/tensor_parallel/
// layers.py; Transformer Engine's Linear and LayerNormLinear do the same) saves only the sequence-sharded input of a
// column-parallel linear: forward all-gathers it, backward all-gathers it again for the weight gradient (async,
// beside the input-gradient GEMM) and reduce-scatters the input gradient (async, beside the weight-gradient GEMM).
// A row-parallel linear reduce-scatters its output forward and all-gathers the output gradient backward before its
// input-gradient GEMM. Per layer: forward 2 all-gathers + 2 reduce-scatters, backward 4 all-gathers + 2
// reduce-scatters, of which 2 + 2 are issued beside the column-parallel GEMMs (how much of them shows: step_variant.cpp).
// `attention_in_bytes` is what the attention's column-parallel linears take in: the activation, or under MLA the
// latents its up projections read (the down projections are duplicated on every rank and need no collective).
// With sequence parallelism a MoE layer without a dense MLP (`moe_dense_mlp` false: no shared experts) keeps the
// attention's share: forward its gather and the out projection's reduce-scatter, backward the out projection's
// output gradient gathered and the qkv input gathered again with its gradient reduce-scattered. Without sequence
// parallelism (which Megatron-LM requires of MoE with TP) the experts' outputs are all-reduced like a dense MLP's.
template <class Price>
void tp_layer_comm(const MicrobatchShape& s, double act_bytes, double attention_in_bytes, bool moe_dense_mlp,
                   const GroupPlacement& tp, Price&& price, LayerComm& out) {
  if (!s.sequence_parallel) {
    const double reduce = price(Collective::allreduce, act_bytes, tp);
    const double attention_reduce = price(Collective::allreduce, attention_in_bytes, tp);
    out.tp_forward_s = out.tp_moe_forward_s = 2 * reduce;
    out.tp_backward_s = out.tp_moe_backward_s = reduce + attention_reduce;
    return;
  }
  const double gather = price(Collective::allgather, act_bytes, tp);
  const double scatter = price(Collective::reducescatter, act_bytes, tp);
  const double attention_gather = price(Collective::allgather, attention_in_bytes, tp);
  const double attention_scatter = price(Collective::reducescatter, attention_in_bytes, tp);
  out.tp_forward_s = attention_gather + gather + 2 * scatter;
  out.tp_backward_s = 2 * gather;
  out.tp_backward_async_s = attention_gather + gather + attention_scatter + scatter;
  out.tp_moe_forward_s = moe_dense_mlp ? out.tp_forward_s : attention_gather + scatter;
  out.tp_moe_backward_s = moe_dense_mlp ? out.tp_backward_s : gather;
  out.tp_moe_backward_async_s = moe_dense_mlp ? out.tp_backward_async_s : attention_gather + attention_scatter;
}

// One dispatch (or combine) of Megatron-Core's flex dispatcher, DeepEP's or HybridEP's kernels: a token crosses once
// to each other node its experts are on, through its rank's own NIC to the rank of the same local index there
// (DeepEP: "forwarding from NVLink to RDMA"), and NVLink carries the copies to the experts' ranks inside each
// node; the combine sums a node's copies before they cross back. The two phases run pipelined, so the longer one
// sets the time. Within one node it is the all-to-all of every copy.
template <class Price>
double flex_dispatch_s(const ModelConfig& m, double copies_bytes, const GroupPlacement& ep, Price&& price) {
  if (ep.ranks_per_node >= ep.ranks) return price(Collective::alltoall, copies_bytes, ep);
  const std::int64_t nodes = (ep.ranks + ep.ranks_per_node - 1) / ep.ranks_per_node;
  const double remote = expected_remote_nodes(m.moe, static_cast<double>(nodes));
  // A rank sends `remote` of each token's top_k copies out; the all-to-all over one rank per node counts its whole
  // buffer, of which each rank sends (nodes - 1) / nodes.
  const double node_count = static_cast<double>(nodes);
  const double crossing_bytes =
      copies_bytes * remote / static_cast<double>(m.moe.top_k) * node_count / (node_count - 1);
  const GroupPlacement rails{nodes, 1, ep.ranks_per_node * ep.concurrent_groups_per_node};
  const GroupPlacement node{ep.ranks_per_node, ep.ranks_per_node, ep.concurrent_groups_per_node};
  const double inter = price(Collective::alltoall, crossing_bytes, rails);
  const double intra = ep.ranks_per_node > 1 ? price(Collective::alltoall, copies_bytes, node) : 0.0;
  return std::max(inter, intra);
}

// Megatron-Core's alltoall token dispatcher (moe/token_dispatcher.py) for one MoE layer, forward: each rank routes
// its own tokens (its sequence shard under sequence parallelism); the busiest rank's share paces the all-to-alls.
// From Megatron-Core 0.13 the routing probabilities travel with the tokens (fp32, an all-to-all of their own).
// The flex dispatcher (DeepEP, HybridEP) moves the tokens as flex_dispatch_s prices them.
// With expert tensor parallelism (expert-TP, by default the TP degree) dispatch_postprocess gathers the tokens
// received over the expert-TP group and combine_preprocess reduce-scatters the experts' outputs back.
template <class Price>
double dispatcher_comm(const ModelConfig& m, const Layout& l, const MicrobatchShape& s, const RankPlacement& placement,
                       Price&& price) {
  const double tokens = s.sequence_parallel ? s.tokens / s.tp : s.tokens;
  const double copies = tokens * static_cast<double>(m.moe.top_k) * s.routed_share;
  const double bytes = copies * s.hidden * s.element_bytes, probs = copies * 4;
  double t = 0;
  if (l.ep > 1) {
    t += 2 * (s.flex_dispatch ? flex_dispatch_s(m, bytes, placement.ep, price)
                              : price(Collective::alltoall, bytes, placement.ep));
    if (s.probs_dispatched) t += price(Collective::alltoall, probs, placement.ep);
  }
  const std::int64_t etp = l.etp > 0 ? l.etp : l.tp;
  if (s.sequence_parallel && etp > 1) {
    GroupPlacement group = placement.tp;   // expert-TP takes the TP coordinate, or the first etp ranks of it
    if (etp != group.ranks) {
      const std::int64_t node = group.ranks_per_node * group.concurrent_groups_per_node;
      group = {etp, std::min(etp, group.ranks_per_node), 1};
      group.concurrent_groups_per_node = std::max<std::int64_t>(1, node / group.ranks_per_node);
    }
    const double gathered = static_cast<double>(etp);
    t += price(Collective::allgather, gathered * bytes, group) + price(Collective::reducescatter, gathered * bytes, group);
    if (s.probs_dispatched) t += price(Collective::allgather, gathered * probs, group);
  }
  return t;
}

// Bytes the attention's column-parallel linears take in, on the whole (b, s/cp) sequence: the activation, or under
// MLA the q latent (or the activation where q is projected directly), the kv latent and the shared rotary key
// (Megatron-LM multi_latent_attention.py gathers the three; priced here as one collective).
inline double attention_input_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  if (!m.mla.enabled) return s.tokens * s.hidden * s.element_bytes;
  const double q = m.mla.q_lora_rank > 0 ? static_cast<double>(m.mla.q_lora_rank) : s.hidden;
  const double kv = static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
  return s.tokens * (q + kv) * s.element_bytes;
}

// `price(collective, bytes, group)`: the collective's time on the placed group (CommMemo or any cache of it).
template <class Price>
LayerComm layer_comm(const ModelConfig& m, const Layout& l, const MicrobatchShape& s, const RankPlacement& placement,
                     Price&& price) {
  LayerComm out;
  const double act_bytes = s.tokens * s.hidden * s.element_bytes;  // the full (b, s/cp, h) activation
  if (l.tp > 1)
    tp_layer_comm(s, act_bytes, attention_input_bytes(m, s), m.moe.shared_experts > 0, placement.tp, price, out);
  if (l.cp > 1) cp_layer_comm(m, l, s, placement.cp, price, out);
  if (m.is_moe()) out.ep_per_layer_s = dispatcher_comm(m, l, s, placement, price);
  return out;
}

// What context parallelism adds to one layer's time. Transformer Engine's ring (AttnFuncWithCPAndKVP2P): with the
// load-balanced split every one of the ring's steps does the same work, and step i's compute hides the transfer
// step i + 1 waits for. Forward passes K/V (ring - 1) times; backward passes K/V and their gradients together, and
// the gradients make one hop more after the last step to reach their owner, which nothing hides. The all-to-alls
// and all-gathers around the attention hide behind nothing (TE waits for them before the kernels start). Zero
// without context parallelism.
struct CpExposed {
  double forward_s = 0, backward_s = 0;
};
inline CpExposed cp_exposed(const LayerComm& comm, const Cost& attention_core) {
  CpExposed out{comm.cp_forward_s, comm.cp_backward_s};
  const double ring = comm.cp_ring_ranks;
  if (ring <= 1) return out;
  const double hop_s = comm.cp_hop_s;
  out.forward_s += (ring - 1) * std::max(0.0, hop_s - attention_core.forward_s / ring);
  out.backward_s += (ring - 1) * std::max(0.0, 2 * hop_s - attention_core.backward_s / ring) + hop_s;
  return out;
}

// Pipeline: one transfer of a microbatch's activations (or their gradients) to the neighbouring stage, scattered
// over the TP ranks as Megatron-LM's scatter-gather optimization does. Zero with one stage.
template <class Price>
double pipeline_transfer_s(const MicrobatchShape& s, double stages, const RankPlacement& placement, Price&& price) {
  if (stages <= 1) return 0;
  return price(Collective::sendrecv, s.tokens * s.hidden * s.element_bytes / s.tp, placement.pp);
}

// The transfers on the critical path: one per microbatch and virtual stage each way, and the fill's and the drain's
// (stages - 1) each way. Waited for one by one (blocking p2p), every one of them shows.
inline double pipeline_comm_s(double transfer_s, double stages, double microbatches, double virtual_stages) {
  if (stages <= 1) return 0;
  return 2 * (microbatches * virtual_stages + stages - 1) * transfer_s;
}
// Whether the pipeline's transfers run beside compute: Megatron-LM and NeMo under the interleaved schedule with
// overlap_p2p_comm, which both turn on there by default (Megatron-LM's --no-overlap-p2p-communication turns it off,
// and both force it off without virtual stages).
inline bool pipeline_overlaps(const Layout& l, const TimeOptions& time) {
  return time.pp_overlap && runs_megatron_core(l.framework) && l.schedule == PpSchedule::interleaved && l.vpp > 1;
}
// The transfers the interleaved schedule's fill waits for, and as many its drain, when the sends run beside compute.
// The first microbatch reaches the last stage through (stages - 1) transfers. The warm-up then runs the forwards in
// groups of `stages` microbatches per model chunk (schedules.py, microbatch_group_size_per_vp_stage defaults to the
// pipeline size): the first stage finishes a group's chunk k after `stages` chunk forwards, while its first
// microbatch needs `stages` chunk forwards and `stages` transfers (round the ring, back from the last stage) before
// chunk k + 1 can start. Each of the (virtual_stages - 1) chunk changes waits `stages` transfers: v p - 1 in all,
// p - 1 without virtual stages. The drain mirrors it with the gradients.
inline double pipeline_fill_transfers(double stages, double virtual_stages) {
  return stages * virtual_stages - 1;
}
// With Megatron-Core's overlap_p2p_comm (the interleaved schedule, schedules.py
// forward_backward_pipelining_with_interleaving) the steady state posts each chunk's send and receive after its
// compute and waits for them only before the next chunk of the same direction: a forward transfer runs beside the
// backward chunk between, a backward one beside the next forward chunk. Those show by what exceeds that chunk, and
// slow it by `slowdown` of what they hide (as every overlapped collective here); the fill's and drain's still wait.
inline double overlapped_pipeline_comm_s(double transfer_s, double stages, double microbatches,
                                         double virtual_stages, double chunk_forward_s, double chunk_backward_s,
                                         double slowdown) {
  if (stages <= 1) return 0;
  auto beside = [&](double compute) {
    return std::max(0.0, transfer_s - compute) + slowdown * std::min(transfer_s, compute);
  };
  return 2 * pipeline_fill_transfers(stages, virtual_stages) * transfer_s +
         microbatches * virtual_stages * (beside(chunk_backward_s) + beside(chunk_forward_s));
}

}  // namespace gpuplan::perf
