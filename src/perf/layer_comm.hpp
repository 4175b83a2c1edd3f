// The communication of one decoder layer and of the pipeline for one microbatch, priced the same way by the step
// model and by the search's step floor (perf/step_floor.hpp).
#pragma once

#include <algorithm>

#include "gpuplan/estimate.hpp"
#include "model/param_parts.hpp"
#include "perf/layer_cost.hpp"

namespace gpuplan::perf {

// A microbatch as the layer costs see it: tokens on this rank, widths, element sizes.
MicrobatchShape microbatch_shape(const EstimateInputs& in, const Layout& layout);

struct LayerComm {
  double tp_per_layer_s = 0;   // the TP collectives of one layer's forward (the backward's match)
  double cp_hop_s = 0;         // one ring step's K/V chunk to the next CP rank
  double ep_per_layer_s = 0;   // a MoE layer's dispatch and combine all-to-alls, forward
};

// `price(collective, bytes, group)`: the collective's time on the placed group (CommMemo or any cache of it).
template <class Price>
LayerComm layer_comm(const ModelConfig& m, const Layout& l, const MicrobatchShape& s, const RankPlacement& placement,
                     Price&& price) {
  LayerComm out;
  const double act_bytes = s.tokens * s.hidden * s.element_bytes;  // the full (b, s/cp, h) activation
  if (l.tp > 1) {
    if (s.sequence_parallel)
      out.tp_per_layer_s = 2 * (price(Collective::allgather, act_bytes, placement.tp) +
                                price(Collective::reducescatter, act_bytes, placement.tp));
    else
      out.tp_per_layer_s = 2 * price(Collective::allreduce, act_bytes, placement.tp);
  }
  if (l.cp > 1) {
    const double kv_bytes = detail::kv_chunk_bytes(m, s.tokens, s.tp, s.element_bytes);
    // The ring moves in lockstep: when it spans nodes, a node-crossing hop paces every step.
    const bool ring_in_one_node = placement.cp.ranks_per_node >= l.cp;
    const GroupPlacement pair{2, ring_in_one_node ? 2 : 1, placement.cp.concurrent_groups_per_node};
    out.cp_hop_s = price(Collective::sendrecv, kv_bytes, pair);
  }
  if (m.is_moe() && l.ep > 1) {
    const double tokens = s.sequence_parallel ? s.tokens / s.tp : s.tokens;
    const double bytes = tokens * static_cast<double>(m.moe.top_k) * s.hidden * s.element_bytes;
    out.ep_per_layer_s = 2 * price(Collective::alltoall, bytes, placement.ep);
  }
  return out;
}

// Transformer Engine's ring attention (AttnFuncWithCPAndKVP2P): with the load-balanced split every one of the cp
// steps does the same work, and step i's compute hides the transfer step i + 1 waits for. Forward passes K/V
// cp - 1 times; backward passes K/V and their gradients together, and the gradients make one hop more after the
// last step to reach their owner, which nothing hides. Per layer; zero without context parallelism.
struct CpExposed {
  double forward_s = 0, backward_s = 0;
};
inline CpExposed cp_exposed(std::int64_t cp_degree, double hop_s, const Cost& attention_core) {
  if (cp_degree <= 1) return {};
  const double cp = static_cast<double>(cp_degree);
  return {(cp - 1) * std::max(0.0, hop_s - attention_core.forward_s / cp),
          (cp - 1) * std::max(0.0, 2 * hop_s - attention_core.backward_s / cp) + hop_s};
}

// Pipeline: one send/recv per microbatch per boundary each way on the critical path (activations scattered over
// the TP ranks, as Megatron-LM's scatter-gather optimization does). Zero with one stage.
template <class Price>
double pipeline_comm_s(const MicrobatchShape& s, double stages, double microbatches, double virtual_stages,
                       const RankPlacement& placement, Price&& price) {
  if (stages <= 1) return 0;
  const double bytes = s.tokens * s.hidden * s.element_bytes / s.tp;
  return 2 * (microbatches * virtual_stages + stages - 1) * price(Collective::sendrecv, bytes, placement.pp);
}

}  // namespace gpuplan::perf
