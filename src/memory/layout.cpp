// Checks a parallel layout against the model and the GPU count, and derives the missing degrees.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "gpuplan/error.hpp"
#include "memory/internal.hpp"

namespace gpuplan {

namespace {

std::string divisors_of(std::int64_t n) {
  std::string out;
  int shown = 0;
  for (std::int64_t d = 1; d <= n && shown < 12; ++d) {
    if (n % d != 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(d);
    ++shown;
  }
  return out;
}

void require_range(const char* field, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value < lo || value > hi)
    throw InputError(field, std::to_string(value), fmt::format("an integer from {} to {}", lo, hi));
}

constexpr std::int64_t kMaxGpus = 100'000'000;

void check_ranges(const MemoryInputs& in, const Layout& l) {
  require_range("layout.tp", l.tp, 1, 65536);
  require_range("layout.pp", l.pp, 1, 65536);
  require_range("layout.vpp", l.vpp, 1, 4096);
  require_range("layout.cp", l.cp, 1, 65536);
  require_range("layout.ep", l.ep, 1, 65536);
  require_range("layout.zero", l.zero, 0, 3);
  require_range("training.seq_len", in.training.seq_len, 1, 1'000'000'000);
  require_range("training.micro_batch", in.training.micro_batch, 1, 100'000'000);
  if (!(in.training.dropout >= 0.0 && in.training.dropout < 1.0))
    throw InputError("training.dropout", fmt::format("{}", in.training.dropout), "a probability in [0, 1)");
  if (l.gpus != 0) require_range("layout.gpus", l.gpus, 1, kMaxGpus);
  if (l.dp != 0) require_range("layout.dp", l.dp, 1, kMaxGpus);
  if (in.training.vocab_divisible_by != 0)
    require_range("training.make_vocab_size_divisible_by", in.training.vocab_divisible_by, 1, 1'000'000);
  const Loss loss = in.training.loss;
  if (l.impl != Impl::megatron && (loss == Loss::fused_te || loss == Loss::fused_native))
    throw InputError("training.loss", fmt::format("'{}' with impl '{}'", to_string(loss), to_string(l.impl)),
                     "unfused or chunked (fused-te and fused-native are Megatron-LM's options)");
}

// The GPU count and the data-parallel degree, each from the other when one is left out.
void derive_degrees(Layout& l) {
  const std::int64_t model_parallel = l.tp * l.pp * l.cp;
  if (model_parallel > kMaxGpus)
    throw InputError("layout.tp x layout.pp x layout.cp", std::to_string(model_parallel),
                     fmt::format("at most {} GPUs", kMaxGpus));
  if (l.gpus == 0 && l.dp == 0) l.dp = 1;
  if (l.dp == 0) {
    if (l.gpus % model_parallel != 0)
      throw InputError("layout.gpus",
                       fmt::format("{} (does not factor into tp {} x pp {} x cp {} = {} times a data-parallel degree)",
                                   l.gpus, l.tp, l.pp, l.cp, model_parallel),
                       fmt::format("a multiple of {}", model_parallel));
    l.dp = l.gpus / model_parallel;
  }
  if (l.gpus == 0) {
    if (l.dp > kMaxGpus / model_parallel)
      throw InputError("layout.dp", std::to_string(l.dp), fmt::format("at most {} GPUs in all", kMaxGpus));
    l.gpus = model_parallel * l.dp;
  }
  if (l.gpus != model_parallel * l.dp)
    throw InputError("layout.dp",
                     fmt::format("{} (tp {} x pp {} x cp {} x dp {} = {} but layout.gpus is {})", l.dp, l.tp, l.pp,
                                 l.cp, l.dp, model_parallel * l.dp, l.gpus),
                     fmt::format("dp = gpus / (tp x pp x cp) = {}", l.gpus / model_parallel));
}

void check_schedule_and_batch(const MemoryInputs& in, Layout& l) {
  if (l.vpp > 1 && l.pp == 1) throw InputError("layout.vpp", std::to_string(l.vpp), "1 unless layout.pp is above 1");
  if (l.vpp > 1) l.schedule = PpSchedule::interleaved;
  if (l.schedule == PpSchedule::interleaved && l.vpp == 1)
    throw InputError("layout.pp_schedule", "interleaved with layout.vpp 1",
                     "layout.vpp 2 or more for the interleaved schedule");
  if (in.training.seq_len % l.cp != 0)
    throw InputError("layout.cp", fmt::format("{} (does not divide training.seq_len {})", l.cp, in.training.seq_len),
                     "a divisor of the sequence length");
  const std::int64_t replica_batch = in.training.micro_batch * l.dp;
  if (in.training.global_batch != 0 && in.training.global_batch % replica_batch != 0)
    throw InputError("training.global_batch",
                     fmt::format("{} (not a multiple of micro-batch {} x dp {} = {})", in.training.global_batch,
                                 in.training.micro_batch, l.dp, replica_batch),
                     fmt::format("a multiple of {}", replica_batch));
}

void check_offload_and_recompute(const Layout& l) {
  if (l.offload != Offload::none && l.zero == 0)
    throw InputError("layout.offload", to_string(l.offload),
                     "offload with layout.zero 1, 2 or 3 (ZeRO-Offload shards first)");
  if (l.offload == Offload::optimizer_and_params && l.zero != 3)
    throw InputError("layout.offload", "optimizer+params with layout.zero " + std::to_string(l.zero),
                     "optimizer+params only with layout.zero 3 (ZeRO-Infinity)");
  if (l.offload_target == OffloadTarget::nvme && l.offload != Offload::none && l.zero != 3)
    throw InputError("layout.offload_target", "nvme with layout.zero " + std::to_string(l.zero),
                     "nvme only with layout.zero 3 (ZeRO-Infinity); cpu otherwise");
  if (l.recompute_layers != -1 && l.recompute != Recompute::full)
    throw InputError("layout.recompute_layers", std::to_string(l.recompute_layers), "only with layout.recompute full");
}

// Tensor parallelism over the heads, expert parallelism over the experts.
void check_heads_and_experts(const ModelConfig& m, const Layout& l) {
  if (m.heads % l.tp != 0)
    throw InputError("layout.tp", fmt::format("{} (does not divide the {} attention heads)", l.tp, m.heads),
                     "a divisor of " + std::to_string(m.heads) + ": " + divisors_of(m.heads));
  if (!m.mla.enabled && m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0)
    throw InputError("layout.tp",
                     fmt::format("{} (neither divides nor is a multiple of the {} key/value heads)", l.tp, m.kv_heads),
                     "a divisor of " + std::to_string(m.kv_heads) + " or a multiple of it");
  if (l.ep > 1 && !m.is_moe())
    throw InputError("layout.ep", std::to_string(l.ep), "1 for a dense model (it has no experts)");
  if (l.etp != l.tp && !m.is_moe())
    throw InputError("layout.etp", fmt::format("{} (a dense model has no experts)", l.etp),
                     fmt::format("the tensor-parallel degree {} or none", l.tp));
  if (!m.is_moe()) return;
  if (m.moe.routed_experts % l.ep != 0)
    throw InputError("layout.ep", fmt::format("{} (does not divide the {} experts)", l.ep, m.moe.routed_experts),
                     "a divisor of " + std::to_string(m.moe.routed_experts) + ": " + divisors_of(m.moe.routed_experts));
  const std::int64_t per_stage = l.tp * l.cp * l.dp;
  if (per_stage % (l.ep * l.etp) != 0)
    throw InputError("layout.ep",
                     fmt::format("{} (ep x expert-tp {} must divide tp x cp x dp = {})", l.ep, l.ep * l.etp, per_stage),
                     "ep x etp dividing the GPUs of one pipeline stage");
}

// What Transformer Engine's context-parallel attention accepts (dot_product_attention/context_parallel.py): the
// all-to-all splits the heads of each rank over the CP ranks (its group's ranks under a2a+p2p), so both the query
// heads and the key/value heads a rank holds must divide; MLA runs only the ring (p2p, a2a+p2p).
void check_context_parallel(const ModelConfig& m, Layout& l) {
  if (l.cp_comm != CpComm::a2a_p2p && l.cp_a2a != 1)
    throw InputError("layout.cp_a2a_size", std::to_string(l.cp_a2a), "only with layout.cp_comm_type a2a+p2p");
  if (l.cp == 1) {   // nothing is exchanged: every type is the same layout
    l.cp_comm = CpComm::p2p;
    l.cp_a2a = 1;
    return;
  }
  if (l.cp_comm == CpComm::a2a_p2p && (l.cp_a2a < 2 || l.cp_a2a >= l.cp || l.cp % l.cp_a2a != 0))
    throw InputError("layout.cp_a2a_size", fmt::format("{} with cp {}", l.cp_a2a, l.cp),
                     fmt::format("a divisor of cp {} between 2 and {} (Transformer Engine runs two levels)", l.cp,
                                 l.cp / 2));
  const std::int64_t group = l.cp_comm == CpComm::a2a ? l.cp : l.cp_a2a;
  if (m.mla.enabled && (l.cp_comm == CpComm::a2a || l.cp_comm == CpComm::all_gather))
    throw InputError("layout.cp_comm_type", fmt::format("{} with MLA attention", to_string(l.cp_comm)),
                     "p2p or a2a+p2p (Transformer Engine runs MLA's unequal K and V widths only on the ring)");
  if (l.cp_comm != CpComm::a2a && l.cp_comm != CpComm::a2a_p2p) return;
  const std::int64_t heads = m.heads / l.tp;
  const std::int64_t kv_heads = m.mla.enabled ? heads : std::max<std::int64_t>(1, m.kv_heads / l.tp);
  if (heads % group != 0 || kv_heads % group != 0)
    throw InputError("layout.cp_comm_type",
                     fmt::format("{} over {} ranks with {} query and {} key/value heads per tensor-parallel rank",
                                 to_string(l.cp_comm), group, heads, kv_heads),
                     "an all-to-all group that divides both head counts, or p2p");
}

// The layers over the pipeline stages (pipeline_split.cpp), and a recompute count within a stage's layers.
void check_pipeline(const ModelConfig& m, const Layout& l) {
  memory::check_pipeline_split(m.layers, l);
  const std::int64_t most = memory::pipeline_split(m.layers, l).most_layers();
  if (l.recompute_layers > most && l.recompute_layers != -1)
    throw InputError("layout.recompute_layers", std::to_string(l.recompute_layers),
                     fmt::format("0 to {} (layers per pipeline stage)", most));
}

}  // namespace

// Transformer Engine's attention backends are a choice only where its flash attention runs: Megatron-Core's modules
// (impl megatron under Megatron-LM or NeMo). Eager attention is Megatron's unfused backend; PyTorch modules call
// scaled_dot_product_attention, which picks its kernels itself.
void memory::check_attention_backend(const Layout& l, std::string_view field) {
  if (l.attention_backend == AttentionBackend::automatic) return;
  const char* backend = to_string(l.attention_backend);
  if (l.attention == Attention::eager)
    throw InputError(std::string(field), fmt::format("{} with eager attention", backend),
                     "auto (eager attention is Megatron's unfused backend)");
  if (!runs_torch_sdpa(l)) return;
  const std::string modules =
      l.framework == Framework::torchtitan ? std::string("torchtitan's") : fmt::format("impl {}", to_string(l.impl));
  throw InputError(std::string(field),
                   fmt::format("{} with {} modules (PyTorch's scaled_dot_product_attention)", backend, modules),
                   "auto, or impl megatron under framework megatron or nemo (Transformer Engine's attention)");
}

Layout resolve_layout(const MemoryInputs& in) {
  Layout l = in.layout;
  check_ranges(in, l);
  if (l.etp == 0) l.etp = l.tp;
  require_range("layout.etp", l.etp, 1, 65536);
  derive_degrees(l);
  check_schedule_and_batch(in, l);
  check_offload_and_recompute(l);
  memory::check_attention_backend(l, "layout.attention_backend");
  if (!in.model) {
    if (l.cp_comm != CpComm::p2p && l.cp > 1)
      throw InputError("layout.cp_comm_type", to_string(l.cp_comm), "p2p with params (the heads are not known)");
    if (l.ep > 1) throw InputError("layout.ep", std::to_string(l.ep), "1 with params (expert parallelism needs model)");
    return l;
  }
  check_heads_and_experts(*in.model, l);
  check_context_parallel(*in.model, l);
  check_pipeline(*in.model, l);
  return l;
}

}  // namespace gpuplan
