// What no training step can beat, whatever overlaps: its FLOPs over the GPU's peak, the bytes its GPUs must move
// through HBM over the HBM bandwidth, and the bytes a node must bring in over its NICs over their bandwidth. Each
// is worked out here on its own, from the layout, not from the step model's terms, so that a test can hold every
// estimate to them (docs/estimate.md, "Physical bounds").
#include <algorithm>
#include <cmath>

#include "gpuplan/estimate.hpp"
#include "memory/internal.hpp"
#include "model/param_parts.hpp"
#include "perf/layer_comm.hpp"
#include "perf/step_model.hpp"

namespace gpuplan {

namespace {

// Routed copies dropped beyond a capacity factor under 1 are never computed: the FLOPs per token of the expert
// GEMMs they would have run (forward and backward), which the model's per-token count includes.
double dropped_expert_flops_per_token(const ModelConfig& m, const TrainingConfig& tr) {
  const double kept = std::min(1.0, memory::routed_share(tr));
  if (!m.is_moe() || kept >= 1) return 0;
  const double expert = static_cast<double>(detail::mlp_params(m, m.moe.expert_ffn_hidden, detail::Biases::exclude));
  const double moe_layers = static_cast<double>(m.moe_layers_in(0, m.layers));
  return 6 * static_cast<double>(m.moe.top_k) * expert * moe_layers * (1 - kept);
}

// How a collective's group sits on the nodes: ranks per node and nodes spanned, and the groups of its kind that
// share a node's NICs.
struct Spread {
  double per_node = 1, nodes = 1, groups_per_node = 1;
};
Spread spread_of(const GroupPlacement& p, int gpus_per_node) {
  Spread s;
  s.per_node = static_cast<double>(std::max<std::int64_t>(1, p.ranks_per_node));
  s.nodes = std::ceil(static_cast<double>(p.ranks) / s.per_node);
  s.groups_per_node = std::max(1.0, static_cast<double>(gpus_per_node) / s.per_node);
  return s;
}

// Bytes one node must receive over its NICs for one call of each group of this kind on it (the lower bound of
// any algorithm, in-network reduction included): an all-gather brings the (n - 1) / n of the `bytes` it does not
// hold; a reduce-scatter or an all-reduce, with the reduction done in the switches, as much; an all-to-all the
// part of every rank's buffer that comes from other nodes; a send/receive its bytes. Zero inside one node.
double node_bytes(Collective c, double bytes, const Spread& s) {
  if (s.nodes <= 1 || bytes <= 0) return 0;
  const double outside = (s.nodes - 1) / s.nodes;
  double per_group = 0;
  switch (c) {
    case Collective::allgather:
    case Collective::reducescatter:
    case Collective::allreduce:
      per_group = outside * bytes;
      break;
    case Collective::alltoall:
      per_group = s.per_node * bytes * outside;
      break;
    default:
      per_group = s.per_node * bytes;
      break;
  }
  return per_group * s.groups_per_node;
}

// Sequences per step: each data-parallel replica's microbatches of micro_batch sequences.
double step_sequences(const TrainingConfig& tr, const Layout& l) {
  return static_cast<double>(microbatches_per_step(tr.global_batch, tr.micro_batch, l.dp) * tr.micro_batch * l.dp);
}

struct NetworkJob {
  const EstimateInputs* in;
  Layout layout;
  RankPlacement placement;
  int gpus_per_node;
  double microbatches;
};

// Data parallelism: ZeRO-3 gathers the weights forward and backward and reduce-scatters the gradients every
// microbatch; below it the gradients are reduced once a step (and ZeRO-1/2 gather the updated weights).
double data_parallel_bytes(const NetworkJob& j, const memory::StageParams& sp) {
  const TrainingConfig& tr = j.in->memory.training;
  const double grad = perf::gradient_wire_bytes(tr, j.layout);
  const perf::GatheredWeightBytes gathered = perf::gathered_weight_bytes(tr, j.layout.framework, sp);
  double bytes = 0;
  struct Group {
    double params, weight_bytes;
    GroupPlacement placement;
  };
  const Group groups[] = {{sp.dense, gathered.dense, j.placement.dp}, {sp.expert, gathered.expert, j.placement.edp}};
  for (const auto& [params, weight_bytes, group] : groups) {
    const Spread s = spread_of(group, j.gpus_per_node);
    if (j.layout.zero == 3) {
      bytes += j.microbatches * (2 * node_bytes(Collective::allgather, weight_bytes, s) +
                                 node_bytes(Collective::reducescatter, params * grad, s));
    } else {
      bytes += node_bytes(Collective::reducescatter, params * grad, s);
      if (j.layout.zero >= 1) bytes += node_bytes(Collective::allgather, weight_bytes, s);
    }
  }
  return bytes;
}

// Context parallelism in one layer and microbatch: the ring and the all-gather bring every other rank's keys and
// values to each node forward and take their gradients back; the all-to-all brings a node the heads it computes of
// every token, Q, K and V forward and the output's and their gradients backward.
double context_parallel_bytes(const NetworkJob& j, double tokens, double e) {
  const ModelConfig& m = *j.in->memory.model;
  const Layout& l = j.layout;
  if (l.cp <= 1) return 0;
  const double tp = static_cast<double>(l.tp);
  const double heads = static_cast<double>(m.heads * m.head_width());
  const double kv_heads = static_cast<double>(m.kv_heads * m.head_width());
  const double q = tokens * heads * e / tp, kv = tokens * 2.0 * kv_heads * e / tp;
  const Spread s = spread_of(j.placement.cp, j.gpus_per_node);
  if (l.cp_comm == CpComm::a2a) return 2 * node_bytes(Collective::alltoall, 2 * q + kv, s);
  return 2 * node_bytes(Collective::allgather, static_cast<double>(l.cp) * kv, s);
}

// Per layer and microbatch: TP's activations (gathered and reduced forward and backward), the CP exchange of the
// keys and values (each rank's must reach the others, forward, and their gradients come back), EP's dispatch and
// combine of the routed tokens, forward and backward.
double layer_bytes(const NetworkJob& j, const memory::StageParams& sp) {
  const ModelConfig& m = *j.in->memory.model;
  const TrainingConfig& tr = j.in->memory.training;
  const Layout& l = j.layout;
  const double e = memory::activation_element_bytes(tr);
  const double tokens = static_cast<double>(tr.micro_batch * tr.seq_len / l.cp);
  const double activation = tokens * static_cast<double>(m.hidden) * e;
  double per_layer = 4 * node_bytes(Collective::allgather, activation, spread_of(j.placement.tp, j.gpus_per_node));
  per_layer += context_parallel_bytes(j, tokens, e);
  double total = static_cast<double>(sp.layers) * per_layer;
  if (m.is_moe() && l.ep > 1) {   // each rank routes its own tokens (a TP rank's share under sequence parallelism)
    const double routing = l.sequence_parallel && l.tp > 1 ? tokens / static_cast<double>(l.tp) : tokens;
    // Copies dropped beyond a capacity factor under 1 are not sent.
    const double kept = std::min(1.0, memory::routed_share(tr));
    const double routed = routing * static_cast<double>(m.moe.top_k) * kept * static_cast<double>(m.hidden) * e;
    const Spread ep = spread_of(j.placement.ep, j.gpus_per_node);
    double crossing = node_bytes(Collective::alltoall, routed, ep);
    if (tr.moe_dispatcher == MoeDispatcher::flex && ep.nodes > 1) {
      // DeepEP / HybridEP: a token comes in once from each other node that routed it here.
      const double remote = perf::expected_remote_nodes(m.moe, ep.nodes);
      crossing = ep.per_node * ep.groups_per_node * routing * kept * remote * static_cast<double>(m.hidden) * e;
    }
    total += static_cast<double>(sp.moe_layers) * 4 * crossing;
  }
  return total * j.microbatches;
}

// Pipeline: each microbatch's activations come in from the previous stage and its gradients from the next; a node
// of the first or the last stage sees one of the two.
double pipeline_bytes(const NetworkJob& j) {
  const Layout& l = j.layout;
  if (l.pp <= 1 || j.placement.pp.ranks_per_node > 1) return 0;   // neighbouring stages share a node
  const TrainingConfig& tr = j.in->memory.training;
  const double e = memory::activation_element_bytes(tr);
  const double per_rank = static_cast<double>(tr.micro_batch * tr.seq_len / l.cp) *
                          static_cast<double>(j.in->memory.model->hidden) * e / static_cast<double>(l.tp);
  return j.microbatches * per_rank * j.gpus_per_node;   // at least one way: the first stage gets no activations
}

double node_import_bytes(const EstimateInputs& in, const Layout& l) {
  NetworkJob j{&in, l, {}, std::max(1, in.fabric.gpus_per_node), 0};
  j.placement = place_ranks(l, j.gpus_per_node, parse_order(in.time.order));
  const TrainingConfig& tr = in.memory.training;
  j.microbatches = static_cast<double>(microbatches_per_step(tr.global_batch, tr.micro_batch, l.dp));
  const ParamCounts counts = count_params(*in.memory.model);
  double most = 0;
  for (const memory::StageParams& sp : memory::stage_params(in.memory, l, &counts))
    most = std::max(most, data_parallel_bytes(j, sp) + layer_bytes(j, sp));
  return most + pipeline_bytes(j);
}

// Each microbatch reads every weight of its stage forward and again backward (ZeRO-3 gathers them first); the
// optimizer step reads and writes the states it updates (fp32 master copy and moments) where they stay on the GPU.
double hbm_bytes(const MemoryInputs& in, const MemoryReport& report) {
  const ParamCounts counts = count_params(*in.model);
  const std::vector<memory::StageParams> stages = memory::stage_params(in, in.layout, &counts);
  const double weight_bytes = in.training.precision == Precision::fp32 ? 4.0 : 2.0;
  const double microbatches = static_cast<double>(report.microbatches);
  double most = 0;
  for (std::size_t i = 0; i < stages.size() && i < report.stages.size(); ++i) {
    const StageMemory& st = report.stages[i];
    const double weights = 2 * microbatches * (stages[i].dense + stages[i].expert) * weight_bytes;
    const double optimizer = 2 * static_cast<double>(st.master_weights + st.optimizer_states);
    most = std::max(most, weights + optimizer);
  }
  return most;
}

}  // namespace

PhysicalBounds physical_bounds(const EstimateInputs& in) {
  PhysicalBounds b;
  if (!in.memory.model) return b;
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  MemoryInputs resolved = in.memory;
  resolved.layout = resolve_layout(in.memory);
  const Layout& l = resolved.layout;
  // Causal attention computes half the s x s score and context products (what the kernels really do).
  const FlopsPerToken f = flops_per_token(m, tr.seq_len);
  const double tokens = step_sequences(tr, l) * static_cast<double>(tr.seq_len);
  b.flops_per_gpu = (f.training - 1.5 * f.attention_forward - dropped_expert_flops_per_token(m, tr)) * tokens /
                    static_cast<double>(l.gpus);
  b.compute_s = b.flops_per_gpu / (perf::peak_tflops(tr, in.gpu) * 1e12);
  b.hbm_bytes_per_gpu = hbm_bytes(resolved, estimate_memory(resolved));
  b.memory_s = b.hbm_bytes_per_gpu / (in.gpu.memory_GBps * 1e9);
  b.node_import_bytes = node_import_bytes(in, l);
  const double nic_Bps = in.fabric.nic_per_gpu_GBps * 1e9 * std::max(1, in.fabric.gpus_per_node);
  b.network_s = nic_Bps > 0 ? b.node_import_bytes / nic_Bps : 0;
  b.binding = b.compute_s >= b.memory_s && b.compute_s >= b.network_s ? "compute"
              : b.memory_s >= b.network_s                               ? "memory"
                                                                        : "network";
  return b;
}

}  // namespace gpuplan
