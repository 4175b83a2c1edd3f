#include "perf/layer_comm.hpp"

#include "memory/internal.hpp"

namespace gpuplan::perf {

namespace {
void set_attention_calls(const Layout& l, MicrobatchShape& s);
}  // namespace

AttentionBytes attention_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  const double heads = static_cast<double>(m.heads) / s.tp;
  AttentionBytes b;
  b.q = s.tokens * heads * static_cast<double>(detail::qk_head_dim(m)) * s.element_bytes;
  b.kv = detail::kv_chunk_bytes(m, s.tokens, s.tp, s.element_bytes);
  b.o = s.tokens * heads * static_cast<double>(detail::v_head_dim(m)) * s.element_bytes;
  if (s.repeat_kv) b.kv = b.q + b.o;   // K and V with every query head's copy
  return b;
}

MicrobatchShape microbatch_shape(const EstimateInputs& in, const Layout& l) {
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  MicrobatchShape s;
  s.tp = static_cast<double>(l.tp);
  s.micro_batch = static_cast<double>(tr.micro_batch);
  s.local_sequence = static_cast<double>(tr.seq_len) / static_cast<double>(l.cp);
  s.keys_per_query = static_cast<double>(tr.seq_len);
  s.tokens = s.micro_batch * s.local_sequence;
  s.hidden = static_cast<double>(m.hidden);
  s.element_bytes = memory::activation_element_bytes(tr);
  // fp8 on a GPU without fp8 tensor cores runs as bf16 (peak_dtype).
  s.gemm_element_bytes = tr.precision == Precision::fp8 && in.gpu.has_dtype("fp8") ? 1.0 : s.element_bytes;
  // The weight-gradient GEMM's output: Megatron-LM's gradient-accumulation fusion reads and writes the main
  // gradient in its dtype; under DeepSpeed autograd writes the parameters' 16-bit gradient at every ZeRO stage (the
  // BF16_Optimizer's hooks widen it afterwards), which keeps the per-layer compute the same for all stages.
  const double written = l.framework == Framework::deepspeed ? s.element_bytes
                                                              : gradient_element_bytes(tr, l.framework, l.zero);
  s.gradient_rw_bytes = 2 * written;
  s.sequence_parallel = l.sequence_parallel && l.tp > 1;
  s.dropout = tr.dropout > 0;
  s.flash = l.attention == Attention::flash;
  s.torch_sdpa = runs_torch_sdpa(l);
  s.flash_attn_package = l.attention_backend == AttentionBackend::flash;
  // Eager PyTorch modules run each elementwise op as a kernel of its own unless torch.compile fuses them.
  s.eager_elementwise =
      (l.impl == Impl::hf || l.framework == Framework::torchtitan) && !runs_compiled(tr, l, in.time.tp_overlap);
  // Eager attention (matmul, softmax, matmul) returns its output in (batch, heads, sequence, dim) layout, which the
  // module's transpose(1, 2).contiguous() copies. PyTorch's fused attention kernels allocate the output like the
  // query (flash_api.cpp, empty_like) and hand it back transposed: torchtitan's query leaves RoPE as (batch,
  // sequence, heads, dim), so its output comes back contiguous after the same call, which then copies nothing.
  // Hugging Face's query is q_proj's output viewed and transposed, and apply_rotary_pos_emb's (q * cos) +
  // (rotate_half(q) * sin) keeps that memory layout (its sum takes its first operand's strides; PyTorch checks it
  // in tests/python/test_eager_elementwise.py): no copy either. torch.nn's modules stay counted as copying.
  s.attention_output_copied =
      s.eager_elementwise && !(s.flash && (l.framework == Framework::torchtitan || l.impl == Impl::hf));
  s.fp8_amax_pass = s.gemm_element_bytes < s.element_bytes && l.framework == Framework::torchtitan;
  s.repeat_kv = l.framework == Framework::torchtitan && m.kv_heads < m.heads && !m.mla.enabled;
  s.routed_share = memory::routed_share(tr);
  s.token_drop = tr.moe_capacity_factor > 0;
  s.pad_to_capacity = tr.moe_pad_to_capacity;
  s.probs_dispatched = tr.megatron_version >= kMegatronProbsInActivationVersion;
  s.flex_dispatch = tr.moe_dispatcher == MoeDispatcher::flex;
  set_attention_calls(l, s);
  return s;
}

// What one flash-attention kernel call sees under each context-parallel exchange (Transformer Engine's
// dot_product_attention/context_parallel.py). The ring (p2p) runs cp steps on chunks of s / (2 cp) keys: Megatron-LM
// gives rank i chunks i and 2cp-1-i to balance the causal work (get_batch_on_this_cp_rank); a2a runs one call on
// the whole sequence with heads / cp; all_gather one call per local chunk, whose keys reach (i + 1) and (2cp - i)
// chunks, s (2cp + 1) / (4 cp) on average; a2a+p2p the ring over cp / cp_a2a ranks.
namespace {
void set_attention_calls(const Layout& l, MicrobatchShape& s) {
  const double cp = static_cast<double>(l.cp);
  if (l.cp <= 1) {
    s.attention_keys_per_call = s.keys_per_query;
    s.attention_calls = 1;
    return;
  }
  switch (l.cp_comm) {
    case CpComm::a2a:
      s.attention_keys_per_call = s.keys_per_query;
      s.attention_calls = 1;
      s.attention_head_split = cp;
      s.cp_a2a_ranks = cp;
      return;
    case CpComm::all_gather:
      s.attention_keys_per_call = s.keys_per_query * (2 * cp + 1) / (4 * cp);
      s.attention_calls = 2;
      s.cp_gather_ranks = cp;
      return;
    case CpComm::a2a_p2p: {
      const double ring = cp / static_cast<double>(l.cp_a2a);
      s.attention_keys_per_call = s.keys_per_query / (2 * ring);
      s.attention_calls = ring;
      s.attention_head_split = static_cast<double>(l.cp_a2a);
      s.cp_ring_ranks = ring;
      s.cp_a2a_ranks = static_cast<double>(l.cp_a2a);
      return;
    }
    case CpComm::p2p:
      break;
  }
  s.attention_keys_per_call = s.local_sequence / 2;
  s.attention_calls = cp;
  s.cp_ring_ranks = cp;
}
}  // namespace

}  // namespace gpuplan::perf
