// Assembles the per-rank memory of every pipeline stage: model states after TP/PP/EP division and ZeRO
// sharding, activations held by the in-flight microbatches, logits, communication buffers and runtime overheads,
// and takes the peak over the phases of a step (forward end, backward, optimizer step).
#include <algorithm>
#include <cmath>

#include "gpuplan/error.hpp"
#include "memory/internal.hpp"

namespace gpuplan {

using memory::Ledger;

namespace {

constexpr const char* kZero = "Rajbhandari et al. 2020, ZeRO (arXiv 1910.02054)";
constexpr const char* kMegatronDistOpt = "Megatron-LM docs/user-guide/features/dist_optimizer.md";

bytes_t to_bytes(double value) {
  if (!(value >= 0) || value > 9.0e18)
    throw InputError("model and layout", "sizes whose byte count overflows 64 bits", "smaller sizes");
  return static_cast<bytes_t>(value + 0.5);  // non-negative: rounds half up without a libm call
}

// Microbatches (1F1B) or model-chunk microbatches (interleaved) stage `i` holds at the peak of the schedule.
std::int64_t in_flight(const Layout& l, std::int64_t i, std::int64_t microbatches) {
  if (l.schedule == PpSchedule::interleaved) {
    // Megatron-LM warmup: 2(p - i - 1) + (v - 1)p chunk forwards, plus the one in flight in steady state.
    return std::min(2 * (l.pp - i - 1) + (l.vpp - 1) * l.pp + 1, microbatches * l.vpp);
  }
  return std::min(l.pp - i, microbatches);  // 1F1B warmup p - i - 1, plus one
}

int communicators(const Layout& l, const ModelConfig* m) {
  int n = 0;
  for (std::int64_t size : {l.tp, l.pp, l.cp, l.dp, l.ep}) n += size > 1 ? 1 : 0;
  if (l.cp > 1 && l.dp > 1) ++n;                                 // Megatron's combined data x context group
  if (m != nullptr && m->is_moe()) {
    const std::int64_t expert_dp = l.gpus / (l.etp * l.ep * l.pp);
    if (expert_dp > 1 && expert_dp != l.dp) ++n;
    if (l.etp > 1 && l.etp != l.tp) ++n;
  }
  if (m != nullptr && m->tied_embeddings && l.pp > 1) ++n;       // embedding-sync group of first and last stage
  return n;
}

}  // namespace

void prepare_inputs(MemoryInputs& in) {
  if (in.model) in.counts = count_params(*in.model);
  else in.counts.reset();
}

MemoryReport estimate_memory(const MemoryInputs& in, bool explain) {
  return estimate_memory(in, resolve_layout(in), explain);
}

MemoryReport estimate_memory(const MemoryInputs& in, const Layout& l, bool explain) {
  const ModelConfig* model = in.model ? &*in.model : nullptr;
  ParamCounts counts;
  if (model != nullptr) counts = in.counts ? *in.counts : count_params(*model);
  return memory::estimate_with_stages(in, l, explain, memory::stage_params(in, l, model != nullptr ? &counts : nullptr));
}

MemoryReport memory::estimate_with_stages(const MemoryInputs& in, const Layout& l, bool explain,
                                          const std::vector<StageParams>& stages) {
  const TrainingConfig& tr = in.training;
  const ModelConfig* model = in.model ? &*in.model : nullptr;
  const memory::StateBytesPerParam sb = memory::state_bytes_per_param(tr, model);

  MemoryReport r;
  r.gpus = l.gpus;
  r.dp = l.dp;
  r.capacity_bytes = in.capacity_bytes;
  r.activations_known = model != nullptr;
  r.params_total = model == nullptr ? in.params
                   : in.counts    ? static_cast<double>(in.counts->total)
                                  : static_cast<double>(count_params(*model).total);
  r.microbatches = tr.global_batch > 0 ? tr.global_batch / (tr.micro_batch * l.dp) : 1;

  const double d_dense = static_cast<double>(l.dp * l.cp);   // context-parallel ranks join the sharding group
  const double d_expert = static_cast<double>(l.gpus / (l.etp * l.ep * l.pp));
  const bool megatron = l.impl == Impl::megatron;
  // Megatron allocates its fp32 main_grad buffer up front; elsewhere gradients persist across microbatches.
  const bool grads_persist = megatron || r.microbatches > 1 || l.pp > 1;

  memory::ActivationContext ctx;
  ctx.model = model;
  ctx.s = static_cast<double>(tr.seq_len / l.cp);
  ctx.s_kv = static_cast<double>(tr.seq_len);
  ctx.b = static_cast<double>(tr.micro_batch);
  ctx.t = static_cast<double>(l.tp);
  ctx.etp = static_cast<double>(l.etp);
  ctx.sp = l.sequence_parallel && l.tp > 1;
  ctx.e = memory::activation_element_bytes(tr);
  ctx.dropout = tr.dropout > 0;
  ctx.attention = l.attention;
  ctx.selective = l.recompute == Recompute::selective;
  ctx.impl = l.impl;
  ctx.fp32_compute = tr.precision == Precision::fp32;

  // Per-microbatch activation pieces are the same on every stage: compute them once.
  Ledger act("activations", nullptr);
  const bool any_moe = model != nullptr && model->is_moe();
  const double a_dense = model != nullptr ? memory::layer_activation_bytes(ctx, false, act) : 0.0;
  const double a_moe = any_moe ? memory::layer_activation_bytes(ctx, true, act) : 0.0;
  const double a_ckpt = model != nullptr ? memory::checkpointed_layer_bytes(ctx, act) : 0.0;
  const double a_embed = model != nullptr ? memory::embedding_activation_bytes(ctx, act) : 0.0;
  const double a_head = model != nullptr ? memory::head_activation_bytes(ctx, act) : 0.0;

  r.stages.resize(stages.size());
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const memory::StageParams& sp = stages[i];
    StageMemory& st = r.stages[i];
    std::vector<Term>* rec = explain ? &st.terms : nullptr;
    st.stage = static_cast<std::int64_t>(i);
    st.layers = sp.layers;
    st.in_flight = in_flight(l, st.stage, r.microbatches);

    // Model states.
    const double zero_w = l.zero >= 3 ? 1.0 : 0.0, zero_g = l.zero >= 2 ? 1.0 : 0.0, zero_o = l.zero >= 1 ? 1.0 : 0.0;
    auto local = [&](double sharded) {
      return sharded > 0 ? sp.dense / d_dense + sp.expert / d_expert : sp.dense + sp.expert;
    };
    const double p_weights = local(zero_w), p_grads = local(zero_g), p_opt = local(zero_o);
    double host = 0;
    Ledger w("weights", rec), mw("master_weights", rec), gr("gradients", rec), os("optimizer_states", rec);
    const bool offload_params = l.offload == Offload::optimizer_and_params;
    const bool offload_opt = l.offload != Offload::none;
    if (offload_params) host += p_weights * sb.weights;
    else w.add("parameters", p_weights * sb.weights, l.zero >= 3 ? kZero : "bytes per parameter x parameters");
    if (offload_opt) {
      host += p_opt * (sb.master + sb.optimizer) + p_grads * 4.0;
    } else {
      mw.add("fp32 master copy", p_opt * sb.master, l.zero >= 1 ? (megatron ? kMegatronDistOpt : kZero) : kZero);
      gr.add(tr.precision == Precision::fp32 || tr.grad_dtype == DType::fp32 ? "fp32 gradients (main_grad)"
                                                                              : "16-bit gradients",
             p_grads * sb.gradients, kMegatronDistOpt);
      os.add("optimizer moments", p_opt * sb.optimizer, "docs/memory.md table 1");
    }

    // Activations of one microbatch on this stage.
    Ledger lg("logits", rec), comm("comm_buffers", rec);
    double stored = 0, working = 0, logits = 0;
    if (model != nullptr) {
      const double layers = static_cast<double>(sp.layers);
      const double moe_layers = static_cast<double>(sp.moe_layers);
      const double per_layer_full = layers > 0 ? ((layers - moe_layers) * a_dense + moe_layers * a_moe) / layers : 0;
      double recomputed = 0;
      if (l.recompute == Recompute::full)
        recomputed = l.recompute_layers < 0 ? layers : std::min(layers, static_cast<double>(l.recompute_layers));
      const double per_microbatch_layers = (layers - recomputed) * per_layer_full + recomputed * a_ckpt;
      const double microbatch_units = l.schedule == PpSchedule::interleaved
                                          ? static_cast<double>(st.in_flight) / static_cast<double>(l.vpp)
                                          : static_cast<double>(st.in_flight);
      const double embed = sp.first ? a_embed : 0.0;
      const double head = sp.last ? a_head : 0.0;
      stored = microbatch_units * (per_microbatch_layers + embed) + head;
      // A recomputed layer rebuilds all of its activations during its backward.
      if (recomputed > 0) working = sp.moe_layers > 0 ? std::max(a_dense, a_moe) : a_dense;
      if (sp.last) logits = memory::logits_bytes(ctx, tr, lg);
      if (explain) {
        // Record the per-layer tables once, scaled to what this stage holds.
        auto record = [&](double factor, auto&& fn) {
          const std::size_t from = st.terms.size();
          Ledger tmp("activations", &st.terms);
          fn(tmp);
          for (std::size_t k = from; k < st.terms.size(); ++k) st.terms[k].bytes *= factor;
        };
        const double full_layers = (layers - recomputed) * microbatch_units;
        if (layers - moe_layers > 0 && full_layers > 0)
          record(full_layers * (layers - moe_layers) / layers,
                 [&](Ledger& g) { memory::layer_activation_bytes(ctx, false, g); });
        if (moe_layers > 0 && full_layers > 0)
          record(full_layers * moe_layers / layers, [&](Ledger& g) { memory::layer_activation_bytes(ctx, true, g); });
        if (recomputed > 0)
          record(recomputed * microbatch_units, [&](Ledger& g) { memory::checkpointed_layer_bytes(ctx, g); });
        if (sp.first) record(microbatch_units, [&](Ledger& g) { memory::embedding_activation_bytes(ctx, g); });
        if (sp.last) record(1.0, [&](Ledger& g) { memory::head_activation_bytes(ctx, g); });
        if (working > 0)
          st.terms.push_back(Term{"backward phase", "recompute working set (one layer rebuilt in backward)", working,
                                  "Chen et al. 2016 gradient checkpointing"});
      }

      // Communication buffers.
      const double tokens = ctx.s * ctx.b;
      const double h = static_cast<double>(model->hidden);
      const double seq_split = ctx.sp ? ctx.t : 1.0;
      if (l.pp > 1)
        comm.add("pipeline send/receive buffers", 2.0 * ctx.e * tokens * h / seq_split, "Megatron-LM p2p_communication.py");
      if (megatron && ctx.sp)
        comm.add("sequence-parallel all-gather buffer", ctx.e * tokens * h, "Megatron-LM global memory buffer");
      if (l.cp > 1) {
        const double kv = static_cast<double>(model->kv_heads * model->head_width());
        comm.add("context-parallel K/V ring buffers (double-buffered)", 2.0 * 2.0 * ctx.e * tokens * kv / ctx.t,
                 "Megatron-Core ring attention (TransformerEngine context parallel)");
      }
      if (l.ep > 1 && sp.moe_layers > 0)
        comm.add("expert all-to-all send buffer", ctx.e * tokens * static_cast<double>(model->moe.top_k) * h,
                 "Megatron-Core MoE alltoall dispatcher");
    }
    const double params_local = sp.dense + sp.expert;
    if (l.zero == 3) {
      const double unit = std::max(sp.largest_layer, sp.embedding);
      comm.add("ZeRO-3 gathered parameters (current and prefetched unit)", 2.0 * unit * sb.weights,
               "DeepSpeed stage3 live parameters; FSDP prefetch");
      comm.add("ZeRO-3 unsharded gradients of one unit before reduce-scatter", unit * sb.gradients,
               "DeepSpeed estimate_zero3_model_states_mem_needs (4 x largest layer)");
    } else if (!megatron && d_dense > 1) {
      if (l.zero == 0) {
        comm.add("DDP gradient buckets (a copy of the gradients; gradient_as_bucket_view=False)",
                 params_local * sb.gradients, "PyTorch DistributedDataParallel, pytorch/pytorch#41954");
      } else {
        const double bucket = std::min(5e8, params_local) * 2.0;
        comm.add("ZeRO reduce bucket (reduce_bucket_size 5e8)", bucket, "DeepSpeed zero config defaults");
        comm.add("ZeRO all-gather bucket (allgather_bucket_size 5e8)", bucket, "DeepSpeed zero config defaults");
      }
    }
    if (offload_opt && l.zero < 3 && megatron)
      comm.add("gradient staging buffer for the host copy", std::min(5e8, params_local) * 2.0,
               "ZeRO-Offload (arXiv 2101.06840)");

    // Phases. Gradients exist in forward only when they persist; the optimizer step may add temporaries.
    const double states_no_grad = w.total() + mw.total() + os.total();
    const double grads = gr.total();
    const double tokens = ctx.s * ctx.b;
    const double backward_temp =
        model != nullptr ? ctx.e * tokens * (2.0 * static_cast<double>(model->hidden) +
                                             static_cast<double>(model->ffn_hidden) / ctx.t)
                         : 0.0;
    const double forward = states_no_grad + (grads_persist ? grads : 0.0) + stored + logits + comm.total();
    const double backward = states_no_grad + comm.total() + working + backward_temp +
                            (grads_persist ? grads + stored + logits : std::max(stored + logits, grads));
    const bool adam_like = tr.optimizer == Optimizer::adam || tr.optimizer == Optimizer::adamw;
    // torch.optim's foreach Adam allocates sqrt(exp_avg_sq) for all parameters at once; fused kernels do not.
    const double opt_temp = (!megatron && adam_like && !offload_opt) ? p_opt * 4.0 : 0.0;
    const double optimizer = states_no_grad + grads + opt_temp + (l.zero == 3 ? 0.0 : comm.total());
    const double peak = std::max({forward, backward, optimizer});

    Ledger rt("runtime", rec);
    if (in.overheads.enabled) {
      rt.add("CUDA context and kernels", static_cast<double>(in.overheads.cuda_context_bytes),
             "data/overheads.json: cuda_context_bytes");
      rt.add("NCCL communicator buffers",
             communicators(l, model) * static_cast<double>(in.overheads.nccl_per_communicator_bytes),
             "data/overheads.json: nccl_per_communicator_bytes");
      rt.add("caching-allocator reserve (fragmentation)", (in.overheads.allocator_reserve_factor - 1.0) * peak,
             "data/overheads.json: allocator_reserve_factor");
    }

    st.weights = to_bytes(w.total());
    st.master_weights = to_bytes(mw.total());
    st.gradients = to_bytes(grads);
    st.optimizer_states = to_bytes(os.total());
    st.activations = to_bytes(stored);
    st.logits = to_bytes(logits);
    st.comm_buffers = to_bytes(comm.total());
    st.runtime = to_bytes(rt.total());
    st.forward_peak = to_bytes(forward + rt.total());
    st.backward_peak = to_bytes(backward + rt.total());
    st.optimizer_peak = to_bytes(optimizer + rt.total());
    st.total = to_bytes(peak + rt.total());
    st.peak_phase = peak == forward ? "forward end" : (peak == backward ? "backward" : "optimizer step");
    const double offloaded = host;
    if (l.offload_target == OffloadTarget::nvme) st.nvme = to_bytes(offloaded);
    else st.host = to_bytes(offloaded);
  }
  r.worst_stage = 0;
  for (std::size_t i = 1; i < r.stages.size(); ++i)
    if (r.stages[i].total > r.worst().total) r.worst_stage = static_cast<std::int64_t>(i);
  r.fits = r.capacity_bytes > 0 && r.worst().total <= r.capacity_bytes;
  return r;
}

}  // namespace gpuplan
