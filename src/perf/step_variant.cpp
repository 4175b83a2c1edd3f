// The variant phase of the step-time model: one pass over the stages for a ZeRO stage, offload and
// recomputation, then the pipeline bubble, the exposed data-parallel and optimizer time, throughput and MFU.
#include <algorithm>
#include <stdexcept>

#include "gpuplan/error.hpp"
#include "model/torchtitan_sac.hpp"
#include "perf/step_model.hpp"

namespace gpuplan::perf {

StepModel::StageTime StepModel::stage_time(std::size_t i, const Layout& variant, double& recomputed) const {
  const StageBase& b = stage_base_[i];
  const double layers = b.layers, moe_layers = b.moe_layers;
  const double slowdown = job_->perf.overlap_slowdown;
  // TP hides behind the layer's GEMMs with --tp-overlap, and only behind those: the norms, activations and
  // attention core run between them and hide nothing. Across nodes the collective is priced on the network tier
  // its group spans and still hides behind no more than that.
  auto tp_exposed = [&](double comm, double compute) {
    return tp_overlap_ ? overlapped(slowdown, comm, compute) : comm;
  };
  StageTime st;
  st.forward = b.forward_s;
  st.backward = b.backward_s;
  recomputed = 0;
  if (variant.recompute == Recompute::full) {
    recomputed = variant.recompute_layers < 0 ? layers
                                              : std::min(layers, static_cast<double>(variant.recompute_layers));
    const double moe_share = layers > 0 ? moe_layers / layers : 0;
    st.recompute = recomputed * ((1 - moe_share) * dense_layer_forward_s_ + moe_share * moe_layer_forward_s_);
  } else if (variant.recompute == Recompute::selective) {
    st.recompute = detail::torchtitan_op_sac(variant.framework, variant.recompute)
                       ? (layers - moe_layers) * dense_op_sac_replay_s_ + moe_layers * moe_op_sac_replay_s_
                       : layers * attention_core_forward_s_;
  }
  // TP: the forward's collectives, the backward's (layer_comm.hpp), the forward's again for recomputed layers. The
  // backward's asynchronous ones are issued beside the column-parallel GEMMs, but without --tp-overlap they are
  // priced as waited for: on measured runs (Korthikanti et al. 2022 Table 5 on A100, Megatron-LM + TE on B200) the
  // sequence-parallel backward takes its collectives' full time, the NCCL kernels and the GEMM sharing the SMs.
  // A MoE layer's differ where it has no dense MLP (layer_comm.hpp).
  auto forward_tp = [&](double comm) { return tp_exposed(comm, layer_gemm_forward_s_); };
  auto backward_tp = [&](double comm) { return tp_exposed(comm, 2 * layer_gemm_forward_s_); };
  const double dense_forward = forward_tp(tp_forward_per_layer_s_);
  const double moe_forward = forward_tp(tp_moe_forward_per_layer_s_);
  const double dense_layers = layers - moe_layers;
  const double recomputed_moe = layers > 0 ? recomputed * moe_layers / layers : 0;
  st.tp = dense_layers * (dense_forward + backward_tp(tp_backward_per_layer_s_ + tp_backward_async_per_layer_s_)) +
          moe_layers * (moe_forward + backward_tp(tp_moe_backward_per_layer_s_)) +
          (recomputed - recomputed_moe) * dense_forward + recomputed_moe * moe_forward + b.tp_embedding_loss_s;
  st.tp += (layers + recomputed) * row_parallel_sm_margin_s(layers, moe_layers);
  // torchtitan's op-level checkpointing keeps the reduce-scatters' outputs but not the all-gathers': the replay
  // gathers each block's inputs again, half of the forward's collectives.
  if (detail::torchtitan_op_sac(variant.framework, variant.recompute))
    st.tp += 0.5 * (dense_layers * dense_forward + moe_layers * moe_forward);
  st.cp = layers * (cp_exposed_forward_s_ + cp_exposed_backward_s_) + recomputed * cp_exposed_forward_s_;
  st.ep = (2 * moe_layers + recomputed_moe) * ep_comm_per_layer_s_;
  return st;
}

// With --tp-overlap, Transformer Engine pipelines the reduce-scatter after each row-parallel forward GEMM into
// that GEMM and runs it on SMs it takes from the GEMM (userbuffers 'pipeline' overlap with set_sm_margin): those
// GEMMs run on the remaining SMs. The time this adds per layer forward, averaged over the stage's layers.
double StepModel::row_parallel_sm_margin_s(double layers, double moe_layers) const {
  const double reserved = job_->perf.tp_overlap_reserved_sms;
  if (!tp_overlap_ || layout_.tp <= 1 || reserved <= 0 || layers <= 0) return 0;
  const double slowdown = reserved / (job_->perf.sm_count - reserved);
  return slowdown *
         ((layers - moe_layers) * dense_row_parallel_forward_s_ + moe_layers * moe_row_parallel_forward_s_) / layers;
}

// Local gradients: dense over the data x context group, experts over the expert-data group.
void StepModel::add_data_parallel(std::size_t i, const Layout& variant, StageTime& st, StepTotals& totals) const {
  const int zero = variant.zero;
  if (layout_.framework == Framework::deepspeed && (zero == 1 || zero == 2))
    return add_deepspeed_data_parallel(i, variant, st, totals);
  if (layout_.framework == Framework::deepspeed && zero == 0) return add_deepspeed_allreduce(i, totals);
  const double slowdown = job_->perf.overlap_slowdown;
  const DpCollectives& dpc = dp_collectives(i, zero == 0 ? 0 : 1);
  double reduce = 0, reduce_bucket = 0, gather = 0, gather_bucket = 0;
  if (zero == 0) {
    reduce = dpc.reduce_s;
    reduce_bucket = dpc.reduce_bucket_s;
  } else if (zero == 3) {
    // Gathers are prefetched one layer ahead, so the first layer's gather waits in each pass; the rest hides
    // behind the compute of the pass only as far as it is shorter, and slows that compute while it runs.
    // The reduce-scatter of the gradients made last waits with nothing left to hide behind.
    const double layers = stage_base_[i].layers;
    const double first = layers > 0 ? dpc.gather_s / layers : dpc.gather_s;
    const double last = zero3_last_reduce_share(i) * dpc.reduce_s;
    st.zero3 = 2 * first + last + overlapped(slowdown, dpc.gather_s - first, st.forward) +
               overlapped(slowdown, dpc.gather_s - first + dpc.reduce_s - last, st.backward + st.recompute);
    if (layout_.framework == Framework::torchtitan) {
      const FrameworkDp& fsdp2 = framework_dp(i);
      st.zero3 += 2 * fsdp2.gather_copy_s + fsdp2.reduce_copy_s;
    }
  } else {
    if (layout_.framework == Framework::torchtitan) {
      // Once per step, as the collectives are priced here; spread over the microbatches like the other terms.
      const FrameworkDp& fsdp2 = framework_dp(i);
      st.zero3 = (fsdp2.gather_copy_s + fsdp2.reduce_copy_s) / microbatches_;
    }
    reduce = dpc.reduce_s;
    reduce_bucket = dpc.reduce_bucket_s;
    gather = dpc.gather_s;
    gather_bucket = dpc.gather_bucket_s;
  }
  double exposed = 0;
  if (dp_overlap_) {
    exposed = std::min(reduce, reduce_bucket + overlapped(slowdown, reduce - reduce_bucket, st.backward + st.recompute)) +
              std::min(gather, gather_bucket + overlapped(slowdown, gather - gather_bucket, st.forward));
  } else {
    exposed = reduce + gather;
  }
  totals.expose_dp(exposed);
}

// The share of a stage's ZeRO-3 gradient reduction that runs after its backward: FSDP's last unit, one layer, whose
// reduce-scatter FSDP2 waits for as the backward ends (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py,
// finalize_backward); DeepSpeed ZeRO-3's last bucket of reduce_bucket_size elements, which
// independent_gradient_partition_epilogue reduces and synchronizes on (deepspeed/runtime/zero/stage3.py).
double StepModel::zero3_last_reduce_share(std::size_t i) const {
  const double layers = stage_base_[i].layers;
  if (layout_.framework != Framework::deepspeed) return layers > 0 ? 1 / layers : 1;
  const memory::StageParams& sp = stages_[i];
  return last_bucket_share(in_->memory.overheads.zero_reduce_bucket_elements, sp.dense + sp.expert);
}

namespace {

// Bytes per parameter of the optimizer's shard that mixed precision moves before the step itself.
// - Megatron-LM and NeMo step on fp32 gradients: a 16-bit gradient buffer is cast into fp32 copies of the shard
//   (megatron/core/optimizer: _copy_model_grads_to_main_grads takes main_grad.float(), a no-op on an fp32 buffer).
//   DeepSpeed's casts are counted with its own copies (add_optimizer).
// - Under fp16 the loss scaler unscales the fp32 gradients and checks them for inf and NaN, a read and a write of
//   each (Megatron's _unscale_main_grads_and_check_for_nan: torch._amp_foreach_non_finite_check_and_unscale_;
//   torch.amp's GradScaler.unscale_ the same; DeepSpeed's FP16_Optimizer.unscale_and_clip_grads: mul_). bf16 has
//   no loss scale, but DeepSpeed's ZeRO optimizers multiply the shard's gradients by 1 / (loss scale x clip)
//   whatever the precision (stage_1_and_2.py and stage3.py unscale_and_clip_grads: grad.data.mul_).
double mixed_precision_pass_bytes(const TrainingConfig& tr, const Layout& variant, double gradient_bytes) {
  constexpr double kFp32Bytes = 4.0;
  double bytes = 0;
  if (runs_megatron_core(variant.framework) && gradient_bytes < kFp32Bytes) bytes += gradient_bytes + kFp32Bytes;
  const bool deepspeed_zero = variant.framework == Framework::deepspeed && variant.zero >= 1;
  if (tr.precision == Precision::fp16 || deepspeed_zero) bytes += 2 * kFp32Bytes;
  return bytes;
}

}  // namespace

// Optimizer step over the local shard; offloaded: on the CPU, with gradients down and weights up the host link.
void StepModel::add_optimizer(std::size_t i, const Layout& variant, StageTime& st, StepTotals& totals) const {
  const memory::StageParams& sp = stages_[i];
  const PerfConstants& perf = job_->perf;
  const int zero = variant.zero;
  const double dp = static_cast<double>(layout_.dp);
  const double shard = sp.dense / (zero >= 1 ? dp * static_cast<double>(layout_.cp) : 1.0) +
                       sp.expert / (zero >= 1 ? expert_data_parallel_ : 1.0);
  const double gradient_bytes = gradient_element_bytes(in_->memory.training, variant.framework, zero);
  if (variant.offload == Offload::none) {
    const Machine mc = machine();
    // Zeroing the gradients for the next step writes every gradient the rank holds, not only its shard below ZeRO-2:
    // Megatron-LM's zero_grad_buffer zeroes the whole local grad_data (megatron/core/distributed/
    // param_and_grad_buffer.py, reset()), and the distributed optimizer leaves that buffer unsharded.
    // Megatron's NaN check reads the same buffer once more, for its norm before the reduction
    // (megatron/core/distributed/param_and_grad_buffer.py, check_grads), one kernel per bucket.
    const double gradients_held = zero >= 2 ? shard : sp.dense + sp.expert;
    double bytes = shard * perf.optimizer_bytes_per_param + gradients_held * (gradient_bytes + grad_check_bytes_);
    double kernels = grad_check_bytes_ > 0 ? 10 : 9;
    // DeepSpeed frees its 16-bit gradients after the step rather than zeroing them, and hands them to the fp32
    // master copy through copies (the memory model's optimizer step, docs/memory.md): ZeRO-1 to 3 take the norm
    // over the 16-bit gradients (g bytes, not 4), flatten the shard's (g + g) and cast the copy to fp32 (g + 4);
    // the FP16_Optimizer casts every gradient to fp32 (g + 4) and flattens the casts (4 + 4).
    if (variant.framework == Framework::deepspeed && gradient_bytes < 4) {
      const double g = gradient_bytes;
      bytes = shard * (perf.optimizer_bytes_per_param + (zero >= 1 ? (g - 4) + 2 * g + (g + 4) : (g + 4) + 8));
      kernels += 2;
    }
    const double mixed_precision = mixed_precision_pass_bytes(in_->memory.training, variant, gradient_bytes);
    if (mixed_precision > 0) {
      bytes += shard * mixed_precision;
      kernels += 1;
    }
    totals.optimizer_s = std::max(totals.optimizer_s, memory_bound_s(mc, bytes, kernels));
    return;
  }
  totals.optimizer_s = std::max(totals.optimizer_s, shard * gpus_sharing_host_ / perf.cpu_adam_params_per_s);
  if (variant.offload_target == OffloadTarget::nvme) {
    add_nvme_traffic(variant, shard, st, totals);
    return;
  }
  if (!(host_link_Bps_ > 0)) return;
  const double down = shard * gradient_bytes / host_link_Bps_, up = shard * weight_bytes_ / host_link_Bps_;
  totals.offload_step_s = std::max(totals.offload_step_s, std::max(0.0, down - st.backward) + up);
  if (variant.offload == Offload::optimizer_and_params) {
    // Weights streamed in for each microbatch's forward and backward, overlapped with that compute.
    const double stream = (sp.dense + sp.expert) * weight_bytes_ / host_link_Bps_;
    st.offload = std::max(0.0, stream - st.forward) + std::max(0.0, stream - st.backward - st.recompute);
  }
}

// ZeRO-Infinity (Rajbhandari et al., arXiv 2104.07857) with the states on the node's NVMe: every transfer runs at
// the GPU's share of the drives (all GPUs of the node swap at once), at most its host link. Gradients are written
// out as the backward produces them, hidden behind it as far as it is longer. The optimizer step then reads each
// sub-group's fp32 states and gradients, updates them on the CPU and writes them back; with DeepSpeed's defaults
// (offload_optimizer.pipeline_read and pipeline_write false: nvme_optimizer_overlap 0 in data/perf.json) the reads
// and writes do not overlap the CPU step, so they add to it (aio.overlap_events only keeps the drives' queues
// full). Offloaded parameters are read again for every forward and backward, each rank its own partition
// (bandwidth-centric partitioning), prefetched behind that pass's compute as far as it is longer (the paper's
// overlap-centric design), and the updated ones written back.
void StepModel::add_nvme_traffic(const Layout& variant, double shard, StageTime& st,
                                 StepTotals& totals) const {
  if (!(nvme_read_Bps_ > 0) || !(nvme_write_Bps_ > 0))
    throw InputError("layout.offload_target", "nvme",
                     "cpu, or a system whose nvme_read_GBps and nvme_write_GBps the catalog states (see 'gpuplan "
                     "catalog systems'; add them with --catalog)");
  constexpr double kFp32Bytes = 4.0;
  const bool params = variant.offload == Offload::optimizer_and_params;
  const double gradients_out = shard * kFp32Bytes / nvme_write_Bps_;
  const double states_in = shard * (offloaded_state_bytes_ + kFp32Bytes) / nvme_read_Bps_;
  const double states_out = shard * (offloaded_state_bytes_ + (params ? weight_bytes_ : 0.0)) / nvme_write_Bps_;
  const double cpu_step = shard * gpus_sharing_host_ / job_->perf.cpu_adam_params_per_s;
  const double hidden = job_->perf.nvme_optimizer_overlap * std::min(states_in + states_out, cpu_step);
  totals.nvme_step_s = std::max(totals.nvme_step_s,
                                std::max(0.0, gradients_out - st.backward) + states_in + states_out - hidden);
  if (params) {
    const double stream = shard * weight_bytes_ / nvme_read_Bps_;
    st.nvme = std::max(0.0, stream - st.forward) + std::max(0.0, stream - st.backward - st.recompute);
  }
}

StepEstimate StepModel::time(const Layout& variant) const {
  StepTotals totals;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    double recomputed = 0;
    StageTime st = stage_time(i, variant, recomputed);
    add_data_parallel(i, variant, st, totals);
    add_optimizer(i, variant, st, totals);
    // Host dispatch: a microbatch of a stage takes the longer of its GPU time and the time its host needs to
    // launch its kernels (forward, recomputed forward, backward at 2x).
    const StageBase& b = stage_base_[i];
    const double rec_kernels = b.layers > 0 ? recomputed * b.layer_kernels / b.layers : 0;
    const double host = (3 * b.forward_kernels + rec_kernels) * job_->perf.host_op_s;
    const double gpu =
        st.forward + st.backward + st.recompute + st.tp + st.cp + st.ep + st.zero3 + st.offload + st.nvme;
    st.host = std::max(0.0, host - gpu) + job_->perf.microbatch_host_s;
    totals.recomputed_layers += recomputed;
    const double t = st.total();
    totals.sum_s += t;
    totals.backward_sum_s += st.backward + st.recompute;
    if (t > totals.slowest_s) {
      totals.slowest_s = t;
      totals.slowest = st;
    }
  }
  return assemble(totals, variant);
}

StepEstimate StepModel::assemble(const StepTotals& totals, const Layout& variant) const {
  const EstimateInputs& in = *in_;
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  const double stages = static_cast<double>(stages_.size());
  const double bubble = (stages - 1) * (totals.sum_s / stages) / virtual_stages_;
  const double mb = microbatches_;
  const StageTime& slowest = totals.slowest;
  StepEstimate r;
  r.peak_tflops = peak_tflops_;
  std::size_t term = 0;
  auto add = [&](std::string_view name, double t) { r.breakdown.at(term++) = TimeTerm{name, t}; };
  add("forward", mb * slowest.forward);
  add("backward", mb * slowest.backward);
  add("recompute", mb * slowest.recompute);
  add("tp_comm", mb * slowest.tp);
  add("cp_comm", mb * slowest.cp);
  add("ep_comm", mb * slowest.ep);
  add("zero3_comm", mb * slowest.zero3);
  add("offload_stream", mb * slowest.offload);
  add("nvme_offload", mb * slowest.nvme + totals.nvme_step_s);
  add("host_bound", mb * slowest.host);
  // The slowest GPU sets the pace of the GPU work every other rank waits on at its collectives (slowest_gpu.hpp),
  // unless the host's dispatch is slower still: its slack beyond the GPU time absorbs the slower GPU first.
  const double slower_gpu = slowest_gpu_share_ * (slowest.forward + slowest.backward + slowest.recompute);
  const double host_slack = std::max(0.0, slowest.host - job_->perf.microbatch_host_s);
  add("slowest_gpu", mb * std::max(0.0, slower_gpu - host_slack));
  add("pipeline_bubble", bubble);
  add("pp_comm", pp_comm_s_);
  add("dp_comm", totals.dp_exposed_s);
  add("embedding_sync", embedding_sync_s_);
  add("sp_grad_sync", sp_grad_sync_s_);
  add("optimizer", totals.optimizer_s + totals.offload_step_s);
  add("overhead", job_->perf.step_overhead_s);
  if (term != kTimeTerms) throw std::logic_error("estimate_step: every breakdown term must be filled");
  double step = 0;
  for (const auto& [name, t] : r.breakdown) step += t;
  r.step_s = step;

  const double tokens = mb * static_cast<double>(tr.micro_batch) * static_cast<double>(layout_.dp) *
                        static_cast<double>(tr.seq_len);
  const double gpus = static_cast<double>(layout_.gpus);
  const FlopsPerToken& fpt = job_->flops;
  r.tokens_per_s = tokens / step;
  r.tokens_per_s_per_gpu = r.tokens_per_s / gpus;
  // FLOPs per token -> TFLOP/s per GPU over this step.
  const auto tflops_per_gpu = [&](double flops_per_token) { return flops_per_token * tokens / step / gpus / 1e12; };
  r.model_tflops_per_gpu = tflops_per_gpu(fpt.training);
  // Hardware FLOPs add the recomputed forward: whole layers (full) or the attention core (selective).
  const double head_forward = 2 * static_cast<double>(m.vocab) * embedding_width_;
  double extra_per_token = 0;
  double recomputed_attention = 0;   // of the attention score and context forwards, per token
  if (variant.recompute == Recompute::full) {
    const double recomputed_share = totals.recomputed_layers / static_cast<double>(m.layers);
    extra_per_token = (fpt.forward - head_forward) * recomputed_share;
    recomputed_attention = fpt.attention_forward * recomputed_share;
  } else if (detail::torchtitan_op_sac(variant.framework, variant.recompute)) {
    extra_per_token = job_->op_sac_recomputed_flops_per_token;   // the attention kernel's output is kept
  } else if (variant.recompute == Recompute::selective) {
    extra_per_token = recomputed_attention = fpt.attention_forward;
  }
  r.hardware_tflops_per_gpu = tflops_per_gpu(fpt.training + extra_per_token);
  r.mfu = r.model_tflops_per_gpu / r.peak_tflops;
  r.hfu = r.hardware_tflops_per_gpu / r.peak_tflops;
  // A causal mask needs half the s x s score and context products: what the kernels really compute, in the
  // training pass (forward and backward, 3 x the forward) and in the recomputed forward alike.
  const double causal_saving = 1.5 * fpt.attention_forward;
  r.mfu_causal = tflops_per_gpu(fpt.training - causal_saving) / r.peak_tflops;
  r.hfu_causal =
      tflops_per_gpu(fpt.training + extra_per_token - causal_saving - 0.5 * recomputed_attention) / r.peak_tflops;
  return r;
}

}  // namespace gpuplan::perf
