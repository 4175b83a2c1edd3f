// When a job does not fit: try single changes, re-estimate each, and price what each costs.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "framework/rules.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"
#include "memory/internal.hpp"
#include "model/param_parts.hpp"
#include "model/torchtitan_sac.hpp"

namespace gpuplan {

namespace {

struct Candidate {
  std::string change;
  std::string description;
  std::function<void(MemoryInputs&)> apply;
};

// Bytes one GPU sends per step for TP all-reduces (4 per layer per microbatch: 2 forward, 2 backward).
double tp_comm_bytes(const MemoryInputs& in, const Layout& l, std::int64_t microbatches) {
  if (!in.model || l.tp <= 1) return 0;
  const double t = static_cast<double>(l.tp);
  const double activation = static_cast<double>(in.training.seq_len / l.cp) * static_cast<double>(in.training.micro_batch) *
                            static_cast<double>(in.model->hidden) * memory::activation_element_bytes(in.training);
  const double layers_per_stage = static_cast<double>(in.model->layers) / static_cast<double>(l.pp);
  return 4.0 * 2.0 * (t - 1.0) / t * activation * layers_per_stage * static_cast<double>(microbatches);
}

// Bytes one GPU sends per step for context parallelism's ring attention (Megatron-LM's P2P exchange): each
// layer's forward passes the rank's key/value chunk cp - 1 times around the ring; the backward passes it again
// with the chunk's key/value gradients, twice the forward's volume.
double cp_comm_bytes(const MemoryInputs& in, const Layout& l, std::int64_t microbatches) {
  if (!in.model || l.cp <= 1) return 0;
  const double tokens = static_cast<double>(in.training.seq_len / l.cp) * static_cast<double>(in.training.micro_batch);
  const double chunk = detail::kv_chunk_bytes(*in.model, tokens, static_cast<double>(l.tp),
                                              memory::activation_element_bytes(in.training));
  const double layers_per_stage = static_cast<double>(in.model->layers) / static_cast<double>(l.pp);
  return 3.0 * static_cast<double>(l.cp - 1) * chunk * layers_per_stage * static_cast<double>(microbatches);
}

// Parameter bytes one data-parallel rank all-reduces (or reduce-scatters + all-gathers) per step.
double dp_comm_bytes(const Layout& l, double params_local) {
  const double d = static_cast<double>(l.dp * l.cp);
  if (d <= 1) return 0;
  const double ring = 2.0 * (d - 1.0) / d * params_local * 2.0;  // 16-bit gradients and parameters
  return l.zero == 3 ? ring * 1.5 : ring;                        // ZeRO-3 gathers parameters again in backward
}

// Changes that keep less in host memory: the parameters back on the GPU, or the states on the node's NVMe
// (ZeRO-Infinity) instead of its RAM.
void add_offload_changes(const Layout& base, std::vector<Candidate>& candidates) {
  if (base.offload == Offload::optimizer_and_params)
    candidates.push_back({"--offload optimizer", "keep the parameters on the GPU, offload only the optimizer states",
                          [](MemoryInputs& m) { m.layout.offload = Offload::optimizer; }});
  if (base.offload != Offload::none && base.zero == 3 && base.offload_target == OffloadTarget::cpu)
    candidates.push_back({"--offload-target nvme",
                          "keep the offloaded states on the node's NVMe instead of its host memory (ZeRO-Infinity)",
                          [](MemoryInputs& m) { m.layout.offload_target = OffloadTarget::nvme; }});
}

// Under Transformer Engine's fp8 (Megatron-LM, NeMo) with the distributed optimizer: fp8 parameters drop the 16-bit
// copy of the layers' Linear weights (--fp8-param-gather).
void add_fp8_changes(const MemoryInputs& in, const Layout& base, std::vector<Candidate>& candidates) {
  if (!in.model || in.training.precision != Precision::fp8 || in.training.fp8_param_gather ||
      !runs_megatron_core(base.framework) || base.impl != Impl::megatron || base.zero < 1 || base.zero == 3)
    return;
  candidates.push_back({"--fp8-param-gather", "the layers' Linear weights as fp8 parameters, no 16-bit copy",
                        [](MemoryInputs& m) { m.training.fp8_param_gather = true; }});
}

// A change the job's framework would not run (DeepSpeed has no ring context parallelism; torchtitan offloads the
// optimizer only with the parameters): never suggested, as the same layout given to memory or estimate is refused.
bool framework_refuses(const MemoryInputs& changed, const Layout& layout) {
  const framework::JobFacts facts{changed.model ? &*changed.model : nullptr, &changed.training, &layout};
  return framework::first_broken(layout.framework, facts) != nullptr;
}

// A change helps when it lowers what does not fit: the GPU's peak, or what a node needs of its host memory or NVMe.
bool helps(const MemoryReport& before, const MemoryReport& after) {
  if (after.worst().total < before.worst().total) return true;
  if (!before.host.fits && after.host.needed_per_node_bytes < before.host.needed_per_node_bytes) return true;
  return !before.nvme.fits && after.nvme.needed_per_node_bytes < before.nvme.needed_per_node_bytes;
}

// The changes worth trying for a layout: more sharding, recomputation, a fused loss, a smaller micro-batch, more
// model parallelism, offload, more GPUs.
std::vector<Candidate> candidate_changes(const MemoryInputs& in, const Layout& base) {
  std::vector<Candidate> candidates;
  for (int z = base.zero + 1; z <= 3; ++z)
    if (base.dp * base.cp > 1)
      candidates.push_back({fmt::format("--zero {}", z),
                            z == 3 ? "shard parameters, gradients and optimizer states over data parallel (ZeRO-3/FSDP)"
                                   : (z == 2 ? "shard gradients and optimizer states (ZeRO-2)"
                                             : "shard optimizer states (ZeRO-1 / distributed optimizer)"),
                            [z](MemoryInputs& m) { m.layout.zero = z; }});
  const bool op_sac = detail::torchtitan_op_sac(base.framework, Recompute::selective);
  if (in.model && base.recompute == Recompute::none && (base.attention == Attention::eager || op_sac))
    candidates.push_back({"--recompute selective",
                          op_sac ? "torchtitan's per-op checkpointing: keep every other matmul's output and the "
                                       "attention's, recompute the rest in backward"
                                     : "recompute attention scores in backward",
                          [](MemoryInputs& m) { m.layout.recompute = Recompute::selective; }});
  if (in.model && base.recompute != Recompute::full)
    candidates.push_back({"--recompute full", "keep only each layer's input; recompute the layer in backward",
                          [](MemoryInputs& m) { m.layout.recompute = Recompute::full; m.layout.recompute_layers = -1; }});
  const Loss loss = in.training.loss;
  if (in.model && in.layout.impl == Impl::megatron && runs_megatron_core(base.framework) &&
      (loss == Loss::unfused || loss == Loss::fused_native))
    candidates.push_back({"--loss fused-te", "Transformer Engine's fused cross-entropy: 16-bit logits, no fp32 softmax",
                          [](MemoryInputs& m) { m.training.loss = Loss::fused_te; }});
  if (in.model && loss != Loss::chunked)
    candidates.push_back({"--loss chunked", "fused/chunked output layer + cross-entropy: logits never materialized",
                          [](MemoryInputs& m) { m.training.loss = Loss::chunked; }});
  // The global batch is stated where the job leaves it to the default (one microbatch per step), which the halved
  // micro-batch would halve too: the change keeps it, and the command says so to give the same total.
  const bool batch_defaulted = in.training.global_batch == 0;
  const std::int64_t kept_batch = batch_defaulted ? in.training.micro_batch * base.dp : in.training.global_batch;
  if (in.training.micro_batch > 1)
    candidates.push_back({fmt::format("--micro-batch {}{}", in.training.micro_batch / 2,
                                      batch_defaulted ? fmt::format(" --global-batch {}", kept_batch) : ""),
                          "halve the micro-batch; gradient accumulation keeps the global batch",
                          [kept_batch](MemoryInputs& m) {
                            m.training.global_batch = kept_batch;
                            m.training.micro_batch /= 2;
                          }});
  const bool dp_even = base.dp % 2 == 0;
  auto grow = [&](const char* flag, std::int64_t value, std::function<void(Layout&)> set) {
    candidates.push_back({fmt::format("{} {}", flag, value), dp_even ? "same GPUs, half the data parallelism"
                                                                     : "twice the GPUs",
                          [=](MemoryInputs& m) {
                            set(m.layout);
                            if (dp_even) {
                              if (m.layout.gpus == 0) m.layout.dp = base.dp / 2;
                              else m.layout.dp = 0;
                            } else {
                              m.layout.gpus = 0;
                              m.layout.dp = base.dp;
                            }
                          }});
  };
  grow("--tp", base.tp * 2, [t = base.tp * 2](Layout& l) { l.tp = t; });
  grow("--pp", base.pp * 2, [p = base.pp * 2](Layout& l) { l.pp = p; });
  grow("--cp", base.cp * 2, [c = base.cp * 2](Layout& l) { l.cp = c; });
  if (base.zero >= 1 && base.offload == Offload::none)
    candidates.push_back({"--offload optimizer", "keep master weights and optimizer states in host memory",
                          [](MemoryInputs& m) { m.layout.offload = Offload::optimizer; }});
  // ZeRO-3's parameters too (DeepSpeed's offload_param; torchtitan's FSDP2 offloads only all of them together).
  if (base.zero == 3 && base.offload == Offload::none)
    candidates.push_back({"--offload optimizer+params", "keep parameters, master weights and optimizer states in host memory",
                          [](MemoryInputs& m) { m.layout.offload = Offload::optimizer_and_params; }});
  add_offload_changes(base, candidates);
  add_fp8_changes(in, base, candidates);
  if (base.zero >= 1)
    for (std::int64_t factor : {2, 4, 8, 16})
      candidates.push_back({fmt::format("--gpus {}", base.gpus * factor),
                            fmt::format("{}x the data-parallel GPUs (shards optimizer states further)", factor),
                            [factor, base](MemoryInputs& m) {
                              m.layout.gpus = base.gpus * factor;
                              m.layout.dp = 0;
                              if (m.training.global_batch == 0)
                                m.training.global_batch = m.training.micro_batch * base.dp * factor;
                            }});
  return candidates;
}

// What the layout costs before any change: its memory, its parameters per rank and its FLOPs per token.
struct Baseline {
  Layout layout;
  MemoryReport report;
  double params_local = 0;
  double flops_training = 0, flops_attention = 0;
  double flops_op_sac_replay = 0;   // torchtitan's op-level checkpointing: what its backward recomputes, per token
};

std::string cost_text(const Suggestion& s, const Layout& base, const Layout& after, const MemoryInputs& in) {
  std::string cost;
  if (s.extra_gpus > 0) cost += fmt::format("+{}; ", format_quantity(s.extra_gpus, "GPU", "GPUs"));
  if (s.extra_compute_fraction > 0)
    cost += fmt::format("+{:.1f}% {}; ", 100.0 * s.extra_compute_fraction,
                        after.pp > base.pp ? "time in pipeline bubble" : "compute");
  if (s.extra_comm_bytes_per_step > 0)
    cost += fmt::format("+{} communicated per GPU per step; ", format_gb(s.extra_comm_bytes_per_step));
  if (after.offload != Offload::none && base.offload == Offload::none)
    cost += "host-link traffic every step (gradients down, parameters up); ";
  if (after.offload_target == OffloadTarget::nvme && base.offload_target != OffloadTarget::nvme)
    cost += "NVMe reads and writes of the states every step, shared by the node's GPUs; ";
  if (base.offload == Offload::optimizer_and_params && after.offload == Offload::optimizer)
    cost += "the parameters' ZeRO-3 shard on the GPU; ";
  if (s.inputs.training.micro_batch < in.training.micro_batch) cost += "smaller GEMMs, more microbatches; ";
  if (cost.empty()) return "no extra compute or communication volume";
  cost.resize(cost.size() - 2);
  return cost;
}

// The extra compute, communication and GPUs a change costs.
void price(Suggestion& s, const MemoryInputs& in, const Baseline& b, const Layout& after, const MemoryReport& r) {
  const Layout& base = b.layout;
  s.new_total = r.worst().total;
  s.fits = r.fits && r.activations_known;  // without the activations nothing is known to fit
  s.extra_gpus = after.gpus - base.gpus;
  const double comm_before = tp_comm_bytes(in, base, b.report.microbatches) +
                             cp_comm_bytes(in, base, b.report.microbatches) + dp_comm_bytes(base, b.params_local);
  const double params_after = r.params_total / static_cast<double>(after.tp * after.pp);
  const double comm_after = tp_comm_bytes(s.inputs, after, r.microbatches) +
                            cp_comm_bytes(s.inputs, after, r.microbatches) + dp_comm_bytes(after, params_after);
  s.extra_comm_bytes_per_step = std::max(0.0, comm_after - comm_before);
  if (b.flops_training > 0) {
    if (after.recompute == Recompute::full && base.recompute != Recompute::full)
      s.extra_compute_fraction = 1.0 / 3.0;  // one more forward per training step (forward is 1/3 of it)
    else if (after.recompute == Recompute::selective && base.recompute == Recompute::none)
      s.extra_compute_fraction = (detail::torchtitan_op_sac(after.framework, after.recompute) ? b.flops_op_sac_replay
                                                                           : b.flops_attention / 3.0) /
                                 b.flops_training;
  }
  if (after.pp > base.pp) {
    const double m = static_cast<double>(r.microbatches);
    s.extra_compute_fraction = static_cast<double>(after.pp - 1) / m - static_cast<double>(base.pp - 1) / m;
  }
  s.cost = cost_text(s, base, after, in);
}

}  // namespace

std::vector<Suggestion> suggest_fixes(const MemoryInputs& in) {
  Baseline b;
  b.layout = resolve_layout(in);
  b.report = estimate_memory(in);
  b.params_local = b.report.params_total / static_cast<double>(b.layout.tp * b.layout.pp);
  b.flops_training = in.model ? flops_per_token(*in.model, in.training.seq_len).training : 0.0;
  b.flops_attention = in.model ? 3.0 * flops_per_token(*in.model, in.training.seq_len).attention_forward : 0.0;
  b.flops_op_sac_replay = in.model ? detail::torchtitan_op_sac_recomputed_flops_per_token(*in.model) : 0.0;

  std::vector<Suggestion> out;
  bool gpus_fit = false;
  for (const auto& c : candidate_changes(in, b.layout)) {
    Suggestion s;
    s.change = c.change;
    s.description = c.description;
    s.inputs = in;
    c.apply(s.inputs);
    // What the framework changes on its own (torchtitan's TP shards the sequence), as memory and estimate run it.
    framework::apply_rewrites(s.inputs.layout.framework, s.inputs.layout);
    Layout after;
    MemoryReport r;
    try {
      after = resolve_layout(s.inputs);
      r = estimate_memory(s.inputs);
    } catch (const InputError&) {
      continue;  // the change is not possible for this model or GPU count
    }
    if (!helps(b.report, r) || framework_refuses(s.inputs, after)) continue;
    if (c.change.rfind("--gpus", 0) == 0) {
      if (gpus_fit) continue;  // only the smallest GPU count that fits
      gpus_fit = r.fits;
    }
    price(s, in, b, after, r);
    out.push_back(std::move(s));
  }
  // Those that fit, cheapest first; then the rest, closest to fitting first.
  std::stable_sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& x) {
    if (a.fits != x.fits) return a.fits;
    if (!a.fits) return a.new_total < x.new_total;
    if (a.extra_gpus != x.extra_gpus) return a.extra_gpus < x.extra_gpus;
    if (a.extra_compute_fraction != x.extra_compute_fraction) return a.extra_compute_fraction < x.extra_compute_fraction;
    if (a.extra_comm_bytes_per_step != x.extra_comm_bytes_per_step)
      return a.extra_comm_bytes_per_step < x.extra_comm_bytes_per_step;
    return a.new_total < x.new_total;
  });
  return out;
}

}  // namespace gpuplan
