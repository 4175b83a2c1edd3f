#include "perf/cp_bookkeeping.hpp"

#include <algorithm>

#include "perf/layer_comm.hpp"

namespace gpuplan::perf {

namespace {

// The p2p ring over `ranks` ranks (AttnFuncWithCPAndKVP2P, causal). Each step's kernel writes a partial output
// (forward) or partial gradients (backward) that a fused elementwise kernel merges into the running result: a copy
// (read and write) for the first, a read of both and a write for each later one. With the load-balanced split a
// rank's step sees its whole query or only the second half of it, and the whole keys or only their first half,
// depending on where it stands in the ring; the ring advances at the pace of its busiest rank.
void add_ring(const AttentionBytes& b, double ranks, ElementwisePasses& t) {
  if (ranks <= 1) return;
  const double later = ranks - 1;
  // Forward: K and V packed into the first send buffer (torch.cat); the last rank's every step covers its whole
  // query, so it merges whole outputs (flash_attn_fwd_out_correction_init, then flash_attn_fwd_out_correction).
  // Kernels: the pack, the output merges, and the last merge of the softmax statistics; the earlier ones run on
  // the other of TE's two streams beside the next step's attention kernel.
  t.forward_bytes += 2 * b.kv + 2 * b.o + 3 * later * b.o;
  t.forward_kernels += 1 + ranks + 1;
  // Backward: K and V copied into the ring's buffer, then dq, dk and dv merged step by step. The last rank merges
  // whole query gradients (a copy, then adds) and half of the K/V gradients until the last step; the first rank
  // the other way round. Whichever moves more paces the ring.
  const double last_rank = 2 * b.q + 3 * later * b.q + (1 + 1.5 * ranks) * b.kv;
  const double first_rank = (0.5 + 1.5 * ranks) * b.q + (3 * ranks - 1.5) * b.kv;
  t.backward_bytes += 2 * b.kv + std::max(last_rank, first_rank);
  t.backward_kernels += 1 + ranks + 2 * ranks;
}

// The all-to-alls over `ranks` ranks (flash_attn_a2a_communicate): before each all-to-all the tensor is made
// rank-major (movedim(...).contiguous()) or its sequence chunks put back in order (index_select), after it the
// other of the two; each a copy. Forward: Q, K and V, then the output; backward: the output's gradient, then dq,
// dk and dv.
void add_all_to_all(const AttentionBytes& b, double ranks, ElementwisePasses& t) {
  if (ranks <= 1) return;
  const double copied = 2 * 2 * (b.q + b.kv + b.o);
  t.forward_bytes += copied;
  t.backward_bytes += copied;
  t.forward_kernels += 2 * 4;
  t.backward_kernels += 2 * 4;
}

// The K/V all-gather over `ranks` ranks (AttnFuncWithCPAndKVAllGather): the gathered K and V reordered by sequence
// chunk (index_select), and each of the two local query chunks' outputs copied into place. Backward gathers and
// reorders again, zeroes the whole sequence's dK and dV, copies the two dq chunks into place, adds each chunk's dK
// and dV over the keys it saw ((2 ranks + 1) / (2 ranks) of the sequence in all), and reorders them for the
// reduce-scatter.
void add_all_gather(const AttentionBytes& b, double ranks, ElementwisePasses& t) {
  if (ranks <= 1) return;
  const double whole_kv = ranks * b.kv;
  t.forward_bytes += 2 * whole_kv + 2 * b.o;
  t.forward_kernels += 2 + 2;
  t.backward_bytes += whole_kv + 2 * whole_kv + 2 * b.q + 1.5 * (2 * ranks + 1) * b.kv + 2 * whole_kv;
  t.backward_kernels += 2 + 2 + 2 + 4 + 2;
}

// PyTorch's ring attention (torch/distributed/tensor/experimental/_attention.py: _templated_ring_attention and its
// backward, as torchtitan's context parallelism runs it, with the defaults convert_to_f32 and load balancing), in
// eager elementwise ops of `e`-byte activations and fp32 (`f`) accumulators:
// - forward: K and V made contiguous, packed (torch.cat) for every hop; each step's output cast to fp32 and, from
//   the second step on, merged as out - sigmoid(lse_i - lse) * (out - out_i) (three passes), the result cast back;
// - backward: fp32 dq, dk, dv zeroed; K and V made contiguous and packed for every hop; each step's dq, dk and dv
//   added into the fp32 accumulators, a partial step's add followed by a torch.cat of the whole tensor
//   (_partial_update); dk and dv packed in fp32 for every hop; the results cast back.
// The last rank of the ring merges whole outputs and query gradients with half K/V gradients, the first rank the
// reverse; the busier paces the ring.
void add_torch_ring(const AttentionBytes& b, double element_bytes, double ranks, ElementwisePasses& t) {
  if (ranks <= 1) return;
  const double e = element_bytes, f = 4, later = ranks - 1;
  const double q = b.q / e, kv = b.kv / e;   // elements
  t.forward_bytes += 2 * e * kv * ranks + (ranks + 1) * (e + f) * q + 8 * f * later * q;
  t.forward_kernels += 9 * ranks - 3;
  const double add = 2 * f + e, partial_add = add / 2 + 2 * f;
  const double last_rank = add * kv + partial_add * kv * later + ranks * add * q;
  const double first_rank = add * q + partial_add * q * later + ranks * add * kv;
  t.backward_bytes += f * (q + kv) + 2 * e * kv * ranks + 2 * f * kv * ranks + (f + e) * (q + kv) +
                      std::max(last_rank, first_rank);
  t.backward_kernels += 4 + 7 * ranks;
}

}  // namespace

ElementwisePasses cp_bookkeeping(const ModelConfig& model, const MicrobatchShape& s) {
  ElementwisePasses t;
  if (s.cp_ring_ranks <= 1 && s.cp_a2a_ranks <= 1 && s.cp_gather_ranks <= 1) return t;
  const AttentionBytes b = attention_bytes(model, s);
  if (s.torch_sdpa) {
    add_torch_ring(b, s.element_bytes, s.cp_ring_ranks, t);
    return t;
  }
  add_ring(b, s.cp_ring_ranks, t);
  add_all_to_all(b, s.cp_a2a_ranks, t);
  add_all_gather(b, s.cp_gather_ranks, t);
  return t;
}

Cost cp_bookkeeping_cost(const Machine& mc, const ModelConfig& model, const MicrobatchShape& s) {
  return memory_bound_cost(mc, cp_bookkeeping(model, s));
}

}  // namespace gpuplan::perf
