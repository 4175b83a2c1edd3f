// One pipeline stage's bytes for one variant: model states, stored activations, communication buffers, the
// three phases of a step and the runtime overheads. The same functions serve the full report (with its terms
// recorded) and the search's worst-stage total, so the two cannot drift apart.
#include <algorithm>

#include "memory/memory_model.hpp"

namespace gpuplan::memory {

namespace {

constexpr const char* kZero = "Rajbhandari et al. 2020, ZeRO (arXiv 1910.02054)";
constexpr const char* kMegatronDistOpt = "Megatron-LM docs/user-guide/features/dist_optimizer.md";

// Microbatches (1F1B) or model-chunk microbatches (interleaved) stage `i` holds at the peak of the schedule.
std::int64_t in_flight(const Layout& l, std::int64_t i, std::int64_t microbatches) {
  if (l.schedule == PpSchedule::interleaved) {
    // Megatron-LM warmup: 2(p - i - 1) + (v - 1)p chunk forwards, plus the one in flight in steady state.
    return std::min(2 * (l.pp - i - 1) + (l.vpp - 1) * l.pp + 1, microbatches * l.vpp);
  }
  return std::min(l.pp - i, microbatches);  // 1F1B warmup p - i - 1, plus one
}

// Parameters a rank keeps of a stage after ZeRO sharding: dense ones over the data x context ranks, experts over
// the expert-data-parallel ranks.
struct LocalParams {
  double weights = 0, gradients = 0, optimizer = 0;
};

LocalParams local_params(const StageParams& sp, int zero, double dense_sharding, double expert_sharding) {
  auto local = [&](bool sharded) {
    return sharded ? sp.dense / dense_sharding + sp.expert / expert_sharding : sp.dense + sp.expert;
  };
  return {local(zero >= 3), local(zero >= 2), local(zero >= 1)};
}

// Adds named contributions; with kRecord also keeps each as a Term (the report's explanation). Without, it is a
// bare sum: the search prices hundreds of thousands of stages and keeps only totals.
template <bool kRecord>
class Tally {
 public:
  Tally(const char* component, std::vector<Term>* record) : component_(component), record_(record) {}
  void add(const char* name, double bytes, const char* source) {
    total_ += bytes;
    if constexpr (kRecord) {
      if (bytes != 0) record_->push_back(Term{component_, name, bytes, source});
    }
  }
  double total() const { return total_; }

 private:
  [[maybe_unused]] const char* component_;
  [[maybe_unused]] std::vector<Term>* record_;
  double total_ = 0;
};

// What each context-parallel exchange holds inside a layer, as the explanation names it.
struct ContextParallelNames {
  const char* forward;
  const char* backward;
  const char* source;
};
ContextParallelNames context_parallel_names(CpComm comm) {
  switch (comm) {
    case CpComm::a2a:
      return {"CP all-to-all: the caller's Q, K, V beside their repacked and exchanged copies",
              "CP all-to-all: repacked and exchanged copies of the query, key and value gradients",
              "Transformer Engine 2.8+ dot_product_attention/context_parallel.py, AttnFuncWithCPAndQKVOA2A"};
    case CpComm::all_gather:
      return {"CP all-gather: the whole sequence's K and V and their reordered copy",
              "CP all-gather: K and V gathered again, whole-sequence K/V gradients and their reordered copy",
              "Transformer Engine 2.x dot_product_attention/context_parallel.py, AttnFuncWithCPAndKVAllGather"};
    case CpComm::a2a_p2p:
      return {"CP all-to-all then ring: exchanged Q, K, V, received K/V chunks and per-step outputs",
              "CP ring backward with the output and its gradient exchanged, or the gradients' all-to-all",
              "Transformer Engine 2.x dot_product_attention/context_parallel.py, AttnFuncWithCPAndKVP2P with a "
              "two-level CP group"};
    case CpComm::p2p:
      break;
  }
  return {"ring attention: received K/V chunks and per-step outputs",
          "ring attention: K/V and gradient exchange, query gradients",
          "Transformer Engine 2.x dot_product_attention/context_parallel.py, AttnFuncWithCPAndKVP2P"};
}

// Records one table of per-microbatch terms, scaled to what the stage holds.
template <typename Table>
void record_scaled(std::vector<Term>& terms, double factor, Table&& table) {
  const std::size_t from = terms.size();
  Ledger scaled("activations", &terms);
  table(scaled);
  for (std::size_t k = from; k < terms.size(); ++k) terms[k].bytes *= factor;
}

// ZeRO-Infinity swaps NVMe-offloaded states through pinned host buffers: the optimizer swapper's buffer_count
// buffers of one fp32 sub-group each (the fp32 master copy and each moment pass through them in turn), and with
// parameters offloaded the parameter swapper's buffer_count buffers of buffer_size 16-bit elements (DeepSpeed
// runtime/swap_tensor/partitioned_optimizer_swapper.py and partitioned_param_swapper.py; defaults in
// data/overheads.json). Neither is larger than what it swaps.
double nvme_host_buffers(const Overheads& o, const MemoryVariant& v, const LocalParams& p, const StateBytesPerParam& sb) {
  double bytes = o.nvme_optimizer_buffer_count * std::min(o.optimizer_sub_group_elements, p.optimizer) * 4.0;
  if (v.offload == Offload::optimizer_and_params)
    bytes += o.nvme_param_buffer_count * std::min(o.nvme_param_buffer_elements, p.weights) * sb.weights;
  return bytes;
}

constexpr const char* kTeFp8Weights =
    "Transformer Engine 2.x pytorch/module/base.py get_weight_workspace, cached while Megatron-Core passes "
    "is_first_microbatch; tensor/float8_tensor.py update_usage";
constexpr const char* kFp8Params =
    "Megatron-LM builds the model under Transformer Engine's fp8_model_init with --fp8-param-gather; "
    "tensor/float8_tensor.py update_usage (a transposed copy where fp8 GEMMs take only TN)";

// A rank's weights. Under Transformer Engine's fp8 (Megatron-Core) each Linear weight of the layers, `fp8_linear`
// of them, also lives in fp8: TE quantizes it on a step's first microbatch and keeps the copy for the others. With
// --fp8-param-gather the fp8 tensor is the parameter itself, with no 16-bit copy. Where fp8 GEMMs take only TN
// (Hopper) a transposed fp8 copy sits beside each for the backward GEMMs.
template <bool kRecord>
void add_weights(Tally<kRecord>& w, double weights, double fp8_linear, bool fp8_param_gather, double fp8_bytes,
                 double sixteen_bit_bytes, const char* source) {
  if (fp8_linear > 0 && fp8_param_gather) {
    w.add("parameters other than the layers' Linear weights", (weights - fp8_linear) * sixteen_bit_bytes, source);
    w.add(fp8_bytes > 1 ? "fp8 Linear weights (--fp8-param-gather), with transposes"
                        : "fp8 Linear weights (--fp8-param-gather)",
          fp8_linear * fp8_bytes, kFp8Params);
    return;
  }
  w.add("parameters", weights * sixteen_bit_bytes, source);
  if (fp8_linear > 0)
    w.add(fp8_bytes > 1 ? "fp8 copies of Linear weights kept by TE, with transposes"
                        : "fp8 copies of Linear weights kept by TE",
          fp8_linear * fp8_bytes, kTeFp8Weights);
}

}  // namespace

double MemoryModel::fp8_linear_weights(const StageParams& sp, int zero, Offload offload) const {
  // Megatron-Core passes is_first_microbatch; Megatron-FSDP (ZeRO-3) and offloaded parameters are not priced this way.
  const bool cached = te_fp8() && runs_megatron_core(shape_.framework) && zero < 3 &&
                      offload != Offload::optimizer_and_params;
  return cached ? sp.linear_weights : 0.0;
}

double MemoryModel::fp8_weight_bytes() const { return job_->inputs->gpu_fp8_any_layout ? 1.0 : 2.0; }

template <bool kExplain>
void MemoryModel::add_states(const StageParams& sp, const MemoryVariant& v, std::vector<Term>* rec,
                             StageBytes& out) const {
  const TrainingConfig& tr = job_->inputs->training;
  const StateBytesPerParam& sb = job_->state_bytes;
  const bool megatron = shape_.impl == Impl::megatron;
  const LocalParams p = local_params(sp, v.zero, dense_sharding_, expert_sharding_);
  Tally<kExplain> w("weights", rec), mw("master_weights", rec), gr("gradients", rec), os("optimizer_states", rec);
  if (v.offload == Offload::optimizer_and_params) out.offloaded += p.weights * sb.weights;
  else
    add_weights(w, p.weights, fp8_linear_weights(sp, v.zero, v.offload), tr.fp8_param_gather, fp8_weight_bytes(),
                sb.weights, v.zero >= 3 ? kZero : "bytes per parameter x parameters");
  if (v.offload != Offload::none) {
    out.offloaded += p.optimizer * (sb.master + sb.optimizer) + p.gradients * 4.0;
    if (v.offload_target == OffloadTarget::nvme) out.host_buffers = nvme_host_buffers(job_->inputs->overheads, v, p, sb);
  } else {
    mw.add("fp32 master copy", p.optimizer * sb.master, v.zero >= 1 ? (megatron ? kMegatronDistOpt : kZero) : kZero);
    const double grad_bytes = gradient_element_bytes(tr, shape_.framework, v.zero);
    if (shape_.framework == Framework::deepspeed) {
      gr.add(grad_bytes == 4.0 ? "fp32 gradients" : "16-bit gradients", p.gradients * grad_bytes,
             "deepspeed/runtime/engine.py get_data_types (data_types.grad_accum_dtype)");
      // The BF16_Optimizer's backward adds autograd's bf16 gradients into the fp32 ones and keeps them
      // (update_hp_grads(clear_lp_grads=False)) until the next backward frees them, unless bf16.immediate_grad_update
      // (off by default) adds each as it is made.
      if (deepspeed_bf16_optimizer(tr, shape_, v.zero))
        gr.add("bf16 gradients kept beside the fp32 ones until the next backward", p.gradients * 2.0,
               "deepspeed/runtime/bf16_optimizer.py backward; precision_config.py immediate_grad_update False");
    } else
      gr.add(grad_bytes == 4.0 ? "fp32 gradients (main_grad)" : "16-bit gradients", p.gradients * grad_bytes,
             kMegatronDistOpt);
    os.add("optimizer moments", p.optimizer * sb.optimizer, "docs/memory.md table 1");
  }
  out.wgrad_dummy = sp.wgrad_dummy_elements * sb.weights;
  if (sp.wgrad_buffer_elements > 0) {
    Tally<kExplain> te("wgrad_buffers", rec);
    te.add("TE weight-gradient buffers, one per distinct Linear shape",
           sp.wgrad_buffer_elements * sb.weights, "Transformer Engine 2.x pytorch/module/base.py, get_dummy_wgrad");
    out.wgrad_buffers = te.total();
  }
  out.weights = w.total();
  out.master = mw.total();
  out.gradients = gr.total();
  out.optimizer = os.total();
  out.optimizer_params = p.optimizer;
}

template <bool kExplain>
void MemoryModel::add_activations(const StageParams& sp, const ActivationTable& acts, const MemoryVariant& v,
                                  const Explanation* explain, StageBytes& out) const {
  if (job_->model == nullptr) return;
  const double layers = static_cast<double>(sp.layers);
  const double moe_layers = static_cast<double>(sp.moe_layers);
  const double per_layer_full =
      layers > 0 ? ((layers - moe_layers) * acts.dense_layer + moe_layers * acts.moe_layer) / layers : 0;
  double recomputed = 0;
  if (v.recompute == Recompute::full)
    recomputed = v.recompute_layers < 0 ? layers : std::min(layers, static_cast<double>(v.recompute_layers));
  const double per_microbatch_layers = (layers - recomputed) * per_layer_full + recomputed * acts.checkpointed_layer;
  const double microbatch_units = shape_.schedule == PpSchedule::interleaved
                                      ? static_cast<double>(out.in_flight) / static_cast<double>(shape_.vpp)
                                      : static_cast<double>(out.in_flight);
  out.one_microbatch = per_microbatch_layers + (sp.first ? acts.embedding : 0.0);
  out.activations = microbatch_units * out.one_microbatch + (sp.last ? acts.head : 0.0);
  // A recomputed layer rebuilds all of its activations during its backward.
  if (recomputed > 0) out.working = sp.moe_layers > 0 ? std::max(acts.dense_layer, acts.moe_layer) : acts.dense_layer;
  else if (acts.rebuilt_layer > 0) out.working = acts.rebuilt_layer;
  if (sp.last) out.logits = acts.logits;
  if constexpr (!kExplain) return;

  // The per-layer tables once, scaled to what this stage holds.
  const ActivationContext& ctx = *explain->context;
  std::vector<Term>& terms = *explain->terms;
  if (sp.last) {
    Ledger logits("logits", &terms);
    logits_bytes(ctx, job_->inputs->training, logits);
  }
  const double full_layers = (layers - recomputed) * microbatch_units;
  if (layers - moe_layers > 0 && full_layers > 0)
    record_scaled(terms, full_layers * (layers - moe_layers) / layers,
                  [&](Ledger& g) { layer_activation_bytes(ctx, false, g); });
  if (moe_layers > 0 && full_layers > 0)
    record_scaled(terms, full_layers * moe_layers / layers, [&](Ledger& g) { layer_activation_bytes(ctx, true, g); });
  if (recomputed > 0)
    record_scaled(terms, recomputed * microbatch_units, [&](Ledger& g) { checkpointed_layer_bytes(ctx, g); });
  if (sp.first) record_scaled(terms, microbatch_units, [&](Ledger& g) { embedding_activation_bytes(ctx, g); });
  if (sp.last) record_scaled(terms, 1.0, [&](Ledger& g) { head_activation_bytes(ctx, g); });
  if (out.working > 0)
    terms.push_back(Term{"backward phase", "recompute working set (one layer rebuilt in backward)", out.working,
                         "Chen et al. 2016 gradient checkpointing"});
  if (shape_.impl != Impl::megatron) return;
  terms.push_back(Term{"backward phase", "one layer's backward: widest gradient and residual gradient",
                       acts.backward_temp, "Megatron-Core MLP / TE linear backward; docs/memory.md"});
  if (out.wgrad_dummy > 0)
    terms.push_back(Term{"backward phase", "TE dummy weight gradient of one Linear (before TE 2.3)", out.wgrad_dummy,
                         "Transformer Engine 1.2-2.2 module/linear.py (NVIDIA/TransformerEngine#507)"});
  if (sp.last) {
    Ledger output("backward phase", &terms);
    output_backward_bytes(ctx, job_->inputs->training, output);
  }
  if (acts.context_parallel_forward > 0) {
    const ContextParallelNames n = context_parallel_names(shape_.cp_comm);
    terms.push_back(Term{"forward phase", n.forward, acts.context_parallel_forward, n.source});
    terms.push_back(Term{"backward phase", n.backward, acts.context_parallel_backward, n.source});
  }
  if (sp.first)
    terms.push_back(Term{"backward phase", "embedding weight gradient (dense 16-bit, until in main_grad)",
                         acts.embedding_backward, "Megatron-Core VocabParallelEmbedding; distributed data parallel hook"});
}

template <bool kExplain>
void MemoryModel::add_comm_buffers(const StageParams& sp, const ActivationTable& acts, const MemoryVariant& v,
                                   std::vector<Term>* rec, StageBytes& out) const {
  const Layout& l = shape_;
  const bool megatron = l.impl == Impl::megatron;
  Tally<kExplain> comm("comm_buffers", rec);
  comm.add("pipeline send/receive buffers", acts.pipeline_buffers, "Megatron-LM p2p_communication.py");
  comm.add("sequence-parallel all-gather buffer", acts.sequence_parallel_buffer, "Megatron-LM global memory buffer");
  comm.add("context-parallel K/V ring buffers (double-buffered)", acts.context_parallel_buffers,
           "Megatron-Core ring attention (TransformerEngine context parallel)");
  if (sp.moe_layers > 0)
    comm.add("expert all-to-all send buffer", acts.expert_dispatch_buffer, "Megatron-Core MoE alltoall dispatcher");
  const StateBytesPerParam& sb = job_->state_bytes;
  const double grad_bytes = gradient_element_bytes(job_->inputs->training, l.framework, v.zero);
  const double params_local = sp.dense + sp.expert;
  // With one rank per replica ZeRO-3 has nothing to shard and gathers nothing (PyTorch FSDP runs NO_SHARD at world
  // size 1): no gather or reduce-scatter buffers, the same bytes as ZeRO-0 to 2.
  const bool gathers = v.zero == 3 && std::max(dense_sharding_, expert_sharding_) > 1;
  // The embedding and the output layer are modules (FSDP units) of their own: one of their tables at a time.
  const double table =
      job_->model != nullptr ? std::min(sp.vocab_rows * static_cast<double>(job_->model->hidden), sp.embedding)
                             : sp.embedding;
  if (gathers && l.framework == Framework::deepspeed) {
    // DeepSpeed gathers module by module: the module running plus stage3_prefetch_bucket_size elements fetched
    // ahead (at most stage3_max_live_parameters).
    const double module = std::max(sp.largest_weight, table);
    const Overheads& o = job_->inputs->overheads;
    comm.add("ZeRO-3 gathered parameters (current module + stage3_prefetch_bucket_size elements)",
             std::min(module + o.zero3_prefetch_elements, o.zero3_max_live_elements) * sb.weights,
             "DeepSpeed stage3_prefetch_bucket_size and stage3_max_live_parameters (data/overheads.json defaults from "
             "zero/config.py, or the request's)");
    // Gradients are copied into a bucket buffer of reduce_bucket_size elements in the 16-bit communication dtype,
    // allocated once (contiguous_gradients, on by default; without it the bucket's gradients are held apart),
    // and reduce-scattered when it is full; each gradient exists apart only until its copy.
    comm.add("ZeRO-3 gradient bucket (reduce_bucket_size elements)", o.zero_reduce_bucket_elements * sb.weights,
             "DeepSpeed stage3.py _setup_for_real_optimizer: the IPG bucket buffer, torch.empty(reduce_bucket_size)");
    // One table of the embedding or output layer at most: their gradients come at opposite ends of the backward.
    comm.add("ZeRO-3 gradient of the largest parameter before its copy into the bucket",
             std::max(sp.largest_weight, table) * sb.weights,
             "DeepSpeed stage3.py: each parameter's gradient is copied into the bucket as its hook fires");
  } else if (gathers) {
    // FSDP2 (torchtitan) and Megatron-FSDP gather a whole layer, and the next one ahead of its use.
    const double unit = std::max(sp.largest_layer, table);
    comm.add("ZeRO-3 gathered parameters (current and prefetched layer)", 2.0 * unit * sb.weights,
             "FSDP2 forward/backward prefetch of one module; Megatron-FSDP double buffer");
    comm.add("ZeRO-3 unsharded gradients of one unit before reduce-scatter", unit * grad_bytes,
             "DeepSpeed estimate_zero3_model_states_mem_needs (4 x largest layer)");
  } else if (!megatron && dense_sharding_ > 1) {
    if (v.zero == 0 && l.framework == Framework::deepspeed) {
      // No PyTorch DDP: the engine flattens the gradients into one buffer of at most 5e8 elements at a time
      // (buffered_allreduce_fallback) and all-reduces it in place.
      comm.add("DeepSpeed all-reduce buffer (the gradients flattened, 5e8 elements at a time)",
               std::min(job_->inputs->overheads.deepspeed_allreduce_buffer_elements, params_local) * grad_bytes,
               "deepspeed/runtime/engine.py buffered_allreduce_fallback, MEMORY_OPT_ALLREDUCE_SIZE");
    } else if (v.zero == 0) {
      comm.add("DDP gradient buckets (a copy of the gradients; gradient_as_bucket_view=False)",
               params_local * grad_bytes, "PyTorch DistributedDataParallel, pytorch/pytorch#41954");
    } else {
      // Both buckets hold the model's parameters' dtype (stage_1_and_2.py allocates the IPG buffer as
      // torch.empty(reduce_bucket_size, dtype=self.dtype)): 16-bit under mixed precision, fp32 in fp32 training.
      const Overheads& o = job_->inputs->overheads;
      comm.add("ZeRO reduce bucket (reduce_bucket_size elements)",
               std::min(o.zero_reduce_bucket_elements, params_local) * sb.weights,
               "DeepSpeed zero_optimization.reduce_bucket_size (data/overheads.json default, or the request's)");
      comm.add("ZeRO all-gather bucket (allgather_bucket_size elements)",
               std::min(o.zero_allgather_bucket_elements, params_local) * sb.weights,
               "DeepSpeed zero_optimization.allgather_bucket_size (data/overheads.json default, or the request's)");
    }
  }
  if (v.offload != Offload::none && v.zero < 3 && megatron)
    comm.add("gradient staging buffer for the host copy", std::min(5e8, params_local) * 2.0,
             "ZeRO-Offload (arXiv 2101.06840)");
  out.comm = comm.total();
}

// What Megatron's backward holds beyond the stored activations, at the largest of its moments: a layer's backward
// (with a recomputed layer's working set); on the last stage the loss and the output layer's backward, after which
// the logits are gone; on the first stage the embedding's weight gradient, once this microbatch's activations are
// freed.
double MemoryModel::megatron_backward_transient(const ActivationTable& acts, const StageBytes& stage) const {
  double transient = stage.working + std::max(acts.backward_temp, acts.context_parallel_backward) + stage.wgrad_dummy;
  if (stage.last) transient = std::max({transient, stage.logits, acts.output_backward});
  if (stage.first) transient = std::max(transient, acts.embedding_backward - stage.one_microbatch);
  return transient;
}

template <bool kExplain>
void MemoryModel::add_phases(const ActivationTable& acts, const MemoryVariant& v, std::vector<Term>* rec,
                             StageBytes& out) const {
  const MemoryInputs& in = *job_->inputs;
  const TrainingConfig& tr = in.training;
  const bool megatron = shape_.impl == Impl::megatron;
  // Megatron allocates its fp32 main_grad buffer up front, and so does DeepSpeed in places; elsewhere gradients
  // persist across microbatches.
  const bool grads_persist = megatron || acts.microbatches > 1 || shape_.pp > 1 ||
                             deepspeed_gradient_buffer(tr, shape_, v.zero);
  // Gradients exist in forward only when they persist; the optimizer step may add temporaries.
  // Transformer Engine's weight-gradient buffers, once allocated, stay through every phase.
  const double states_no_grad = out.weights + out.master + out.optimizer + out.wgrad_buffers;
  const double grads = out.gradients;
  const double backward_temp = acts.backward_temp;
  const double stored = out.activations, logits = out.logits, comm = out.comm;
  // Ring attention's buffers come and go inside a layer, before the logits exist.
  out.forward = states_no_grad + (grads_persist ? grads : 0.0) + stored + comm +
                std::max(logits, acts.context_parallel_forward);
  if (megatron) {
    out.backward = states_no_grad + grads + comm + stored + megatron_backward_transient(acts, out);
  } else {
    out.backward = states_no_grad + comm + out.working + backward_temp +
                   (grads_persist ? grads + stored + logits : std::max(stored + logits, grads));
  }
  const OptimizerStep step = optimizer_step(
      tr, shape_, {v.zero, v.offload, grads, out.optimizer_params, in.overheads.optimizer_sub_group_elements});
  out.optimizer_step = states_no_grad + step.gradients + step.temporaries + (v.zero == 3 ? 0.0 : comm);
  if (rec != nullptr && step.temporaries > 0)
    rec->push_back(Term{"optimizer step phase", "gradient copies and temporaries of the step", step.temporaries,
                        step.source});
  out.peak = std::max({out.forward, out.backward, out.optimizer_step});

  Tally<kExplain> outside("runtime", rec), reserve("runtime", rec);
  if (in.overheads.enabled) {
    outside.add("GPU context and kernels (CUDA or HIP)", static_cast<double>(in.overheads.cuda_context_bytes),
                "data/overheads.json: cuda_context_bytes");
    outside.add("NCCL or RCCL communicator buffers",
                communicators_ * static_cast<double>(in.overheads.nccl_per_communicator_bytes),
                "data/overheads.json: nccl_per_communicator_bytes");
    reserve.add("caching-allocator reserve (fragmentation)", (in.overheads.allocator_reserve_factor - 1.0) * out.peak,
                "data/overheads.json: allocator_reserve_factor");
  }
  out.outside_torch = outside.total();
  out.reserve = reserve.total();
  out.runtime = out.outside_torch + out.reserve;
}

template <bool kExplain>
MemoryModel::StageBytes MemoryModel::stage_bytes(std::size_t i, const ActivationTable& acts, const MemoryVariant& v,
                                                 const Explanation* explain) const {
  const StageParams& sp = stages_[i];
  std::vector<Term>* rec = kExplain ? explain->terms : nullptr;
  StageBytes out;
  out.in_flight = in_flight(shape_, static_cast<std::int64_t>(i), acts.microbatches);
  out.first = sp.first;
  out.last = sp.last;
  add_states<kExplain>(sp, v, rec, out);
  add_activations<kExplain>(sp, acts, v, explain, out);
  add_comm_buffers<kExplain>(sp, acts, v, rec, out);
  add_phases<kExplain>(acts, v, rec, out);
  return out;
}

template MemoryModel::StageBytes MemoryModel::stage_bytes<true>(std::size_t, const ActivationTable&,
                                                               const MemoryVariant&, const Explanation*) const;
template MemoryModel::StageBytes MemoryModel::stage_bytes<false>(std::size_t, const ActivationTable&,
                                                                const MemoryVariant&, const Explanation*) const;

}  // namespace gpuplan::memory
