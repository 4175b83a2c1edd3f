// DeepSpeed's gradient reduction and weight gather below ZeRO-3, as its defaults run them
// (deepspeed/runtime/zero/stage_1_and_2.py, DeepSpeedZeroOptimizer; zero/config.py for the defaults):
// - each gradient, as its backward hook fires, is copied into the bucket buffer (contiguous_gradients;
//   reduce_independent_p_g_buckets_and_remove_grads) on the compute stream;
// - a full bucket (reduce_bucket_size elements) is divided by the data-parallel size in place (average_tensor),
//   flattened again (allreduce_bucket) and all-reduced over the data-parallel group: with
//   use_multi_rank_bucket_allreduce the slices of every rank go into one all-reduce, not a reduce-scatter. Each
//   rank then copies back the slices it owns (allreduce_and_copy_with_multiple_ranks);
// - ZeRO-2 (partition_gradients) reduces in every microbatch's backward, ZeRO-1 only at the gradient
//   accumulation boundary (reduce_ready_partitions_and_remove_grads);
// - with overlap_comm (off by default below ZeRO-3) the division, the flattening and the all-reduce run on the
//   reduction stream while the next bucket fills, and the compute stream waits for the previous bucket before
//   handing over the next one: one bucket in flight. Without it all of it runs on the compute stream;
// - after the optimizer step the updated 16-bit weights are all-gathered (all_gather_dp_groups) into the flat
//   buffers the parameters view, with no compute left to hide behind.
// The buckets hold the gradients in the model's dtype (communication_data_type's default).
// Without ZeRO the engine reduces in buffered_allreduce_fallback (deepspeed/runtime/engine.py), called from
// backward() at the gradient accumulation boundary, after the last backward: the gradients are flattened into
// buffers of MEMORY_OPT_ALLREDUCE_SIZE (5e8) elements, scaled by 1 / data-parallel size in place, all-reduced and
// copied back tensor by tensor (allreduce_and_copy). Nothing overlaps it, whatever overlap_comm says: that key
// belongs to the ZeRO optimizers.
#include <algorithm>
#include <cmath>

#include "memory/internal.hpp"
#include "perf/step_model.hpp"

namespace gpuplan::perf {

namespace {

// Weight tensors of a decoder layer, one copy kernel each: its norms, the four attention projections and the MLP
// matrices (MoE layers counted alike).
double weight_tensors_per_layer(const ModelConfig& m) {
  return static_cast<double>(m.norms_per_layer) + 4 + (m.mlp == MlpKind::gated ? 3 : 2);
}

}  // namespace

void StepModel::deepspeed_reduction(const memory::StageParams& sp, FrameworkDp& out) const {
  const Machine mc = machine();
  const double element = weight_bytes_;
  const double params = sp.dense + sp.expert;
  const double bucket_elements = in_->memory.overheads.zero_reduce_bucket_elements;
  const double buckets = std::max(1.0, std::ceil(params / bucket_elements));
  // The all-reduce of every full bucket and of the rest.
  const double full_buckets = std::floor(sp.dense / bucket_elements);
  const double rest = sp.dense - full_buckets * bucket_elements;
  const double full_bucket_s = collective_(Collective::allreduce, bucket_elements * element, placement_.dp);
  const double rest_s = collective_(Collective::allreduce, rest * element, placement_.dp);
  const double all_reduce =
      full_buckets * full_bucket_s + rest_s + collective_(Collective::allreduce, sp.expert * element, placement_.edp);
  const double tensors = static_cast<double>(sp.layers) * weight_tensors_per_layer(*in_->memory.model) + 2;
  // In place division (a read and a write), the flattening copy, and the owned slices copied back.
  const double owned = params / static_cast<double>(layout_.dp);
  out.bucket_copy_s = memory_bound_s(mc, 2 * element * params, tensors);
  out.reduction_s = all_reduce + memory_bound_s(mc, 4 * element * params + 2 * element * owned, 3 * buckets);
  out.last_bucket_share = last_bucket_share(bucket_elements, params);
  // ZeRO-0: flatten (a read and a write), scale in place (a read and a write), copy back (a read and a write), in
  // the gradients' dtype; one flattening and one scaling kernel per 5e8-element buffer, one copy per tensor. Where
  // the gradients are wider than the communication dtype (bf16 training keeps fp32 gradients below ZeRO,
  // get_data_types), allreduce_bucket casts the flat buffer down before the all-reduce and copies the result back
  // into it: the scaling runs on the narrower copy, and two casts per buffer are added.
  const double buffers =
      std::max(1.0, std::ceil(params / in_->memory.overheads.deepspeed_allreduce_buffer_elements));
  const double g = gradient_element_bytes(in_->memory.training, Framework::deepspeed, 0), c = reduce_bytes_;
  const double cast = g != c ? 2 * (g + c) : 0;
  out.fallback_copy_s =
      memory_bound_s(mc, (4 * g + 2 * c + cast) * params, 2 * buffers + tensors + (cast > 0 ? 2 * buffers : 0));
  // The BF16_Optimizer's backward ends by adding every bf16 gradient into its fp32 one (bf16_optimizer.py
  // _update_hp_grad: hp_grad.add_(lp.grad.to(fp32))): a cast that reads 2 B and writes 4, and an add that reads
  // 4 + 4 and writes 4, two kernels per tensor, after every microbatch's backward.
  if (memory::deepspeed_bf16_optimizer(in_->memory.training, layout_, 0))
    out.hp_accumulate_s = memory_bound_s(mc, 18 * params, 2 * tensors);
}

void StepModel::add_deepspeed_data_parallel(std::size_t i, const Layout& variant, StageTime& st,
                                            StepTotals& totals) const {
  const DpCollectives& dpc = dp_collectives(i, 1);
  const FrameworkDp& ds = framework_dp(i);
  double pass = ds.bucket_copy_s + ds.reduction_s;
  if (dp_overlap_) {
    const double last = ds.last_bucket_share * ds.reduction_s;
    pass = ds.bucket_copy_s + last +
           overlapped(job_->perf.overlap_slowdown, ds.reduction_s - last, st.backward + st.recompute);
  }
  const double passes = variant.zero == 2 ? microbatches_ : 1.0;
  const double exposed = passes * pass + dpc.gather_s;
  totals.expose_dp(exposed);
}

void StepModel::add_deepspeed_allreduce(std::size_t i, StepTotals& totals) const {
  const FrameworkDp& ds = framework_dp(i);
  totals.expose_dp(dp_collectives(i, 0).reduce_s + ds.fallback_copy_s + microbatches_ * ds.hp_accumulate_s);
}

}  // namespace gpuplan::perf
