// Activation memory per layer and outside the layers, dispatched to the table of the chosen implementation.
#include "memory/activations_common.hpp"

namespace gpuplan::memory {

namespace {
constexpr const char* kKorthikantiSection4 = "Korthikanti et al. 2022, arXiv 2205.05198, sec. 4";
constexpr const char* kTorchNn = "docs/activations-torch-nn.md (measured with saved_tensors_hooks)";
constexpr const char* kHf = "Hugging Face transformers modeling_llama.py (RMSNorm in fp32, fp32 softmax)";
constexpr const char* kTeCrossEntropy =
    "Transformer Engine 2.x pytorch/triton/cross_entropy.py (gradient written into the logits in place)";
constexpr const char* kMegatronCrossEntropy = "Megatron-Core tensor_parallel/cross_entropy.py (fp32 softmax saved)";
constexpr const char* kMegatronFusedCrossEntropy = "Megatron-Core fusions/fused_cross_entropy.py (fp32 softmax saved)";
constexpr const char* kMegatronLinear =
    "Megatron-Core tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication.backward";
}  // namespace

Shapes shapes_of(const ActivationContext& c) {
  const ModelConfig& m = *c.model;
  Shapes x;
  x.tokens = c.seq_local * c.micro_batch;
  x.hidden = static_cast<double>(m.hidden);
  x.heads = static_cast<double>(m.heads);
  x.ffn = static_cast<double>(m.ffn_hidden);
  x.gated = m.mlp == MlpKind::gated;
  x.norm_stats = m.norm == NormKind::layernorm ? 8.0 : 4.0;
  if (m.mla.enabled) {
    x.mla = true;
    x.q_width = x.heads * static_cast<double>(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim);
    x.kv_width = x.q_width;
    x.v_width = x.heads * static_cast<double>(m.mla.v_head_dim);
  } else {
    x.q_width = x.heads * static_cast<double>(m.head_width());
    x.kv_width = static_cast<double>(m.kv_heads * m.head_width());
    x.v_width = x.q_width;
  }
  return x;
}

void core_attention_terms(const ActivationContext& c, const Shapes& x, Ledger& g, const char* eager_source,
                          const char* flash_source) {
  if (c.attention == Attention::flash) {
    g.add("flash attention logsumexp (fp32)", 4.0 * x.tokens * x.heads / c.tp, flash_source);
    return;
  }
  if (c.selective) return;  // selective recompute re-runs QK^T, softmax, dropout and the V product
  const double scores = x.tokens * c.keys_per_query * x.heads / c.tp;
  g.add("attention probabilities (softmax output)", c.element_bytes * scores, eager_source);
  if (c.dropout) {
    g.add("attention dropout mask (1 byte)", scores, eager_source);
    g.add("attention dropout output", c.element_bytes * scores, eager_source);
  }
}

void mla_projection_terms(const ActivationContext& c, const Shapes& x, Ledger& g, double seq_split) {
  const MlaConfig& mla = c.model->mla;
  const char* src = "DeepSeek-V2/V3 MLA (arXiv 2405.04434): latent down/up projections";
  g.add("q and kv down-projection input", c.element_bytes * x.tokens * x.hidden / seq_split, src);
  if (mla.q_lora_rank > 0) {
    const double q = static_cast<double>(mla.q_lora_rank);
    g.add("q latent norm input and up-projection input", 2.0 * c.element_bytes * x.tokens * q / seq_split, src);
  }
  const double kv = static_cast<double>(mla.kv_lora_rank);
  g.add("kv latent norm input and up-projection input", 2.0 * c.element_bytes * x.tokens * kv / seq_split, src);
  g.add("query", c.element_bytes * x.tokens * x.q_width / c.tp, src);
  g.add("key", c.element_bytes * x.tokens * x.kv_width / c.tp, src);
  g.add("value", c.element_bytes * x.tokens * x.v_width / c.tp, src);
}

double layer_activation_bytes(const ActivationContext& c, bool moe_layer, Ledger& g) {
  const Shapes x = shapes_of(c);
  if (c.op_sac) return torchtitan_op_sac_layer(c, x, moe_layer, g);
  switch (c.impl) {
    case Impl::megatron: return megatron_attention(c, x, g) + megatron_mlp(c, x, moe_layer, g);
    case Impl::hf: return hf_layer(c, x, moe_layer, g);
    case Impl::torch_nn: return torch_nn_layer(c, x, g);
  }
  return 0;
}

double checkpointed_layer_bytes(const ActivationContext& c, Ledger& g) {
  const Shapes x = shapes_of(c);
  const double before = g.total();
  // The checkpoint keeps the layer input only: the residual stream, fp32 under torch autocast.
  const double residual_bytes = c.impl == Impl::torch_nn ? 4.0 : c.element_bytes;
  const double seq_split = (c.impl == Impl::megatron && c.sequence_parallel) ? c.tp : 1.0;
  g.add("checkpointed layer input", residual_bytes * x.tokens * x.hidden / seq_split,
        c.impl == Impl::torch_nn ? kTorchNn : kKorthikantiSection4);
  return g.total() - before;
}

double embedding_activation_bytes(const ActivationContext& c, Ledger& g) {
  const Shapes x = shapes_of(c);
  const double before = g.total();
  g.add("input token ids (int64)", 8.0 * x.tokens, "embedding saves its indices");
  if (c.impl == Impl::torch_nn) {
    g.add("position ids (int64)", 8.0 * c.seq_local, kTorchNn);
    if (c.dropout) g.add("embedding dropout mask (fp32, CPU dropout)", 4.0 * x.tokens * x.hidden, kTorchNn);
  } else if (c.dropout) {
    const double seq_split = (c.impl == Impl::megatron && c.sequence_parallel) ? c.tp : 1.0;
    g.add("embedding dropout mask (1 byte)", x.tokens * x.hidden / seq_split, kKorthikantiSection4);
  }
  return g.total() - before;
}

double head_activation_bytes(const ActivationContext& c, Ledger& g) {
  const Shapes x = shapes_of(c);
  const double before = g.total();
  switch (c.impl) {
    case Impl::megatron: {
      const double seq_split = c.sequence_parallel ? c.tp : 1.0;
      g.add("final norm input", c.element_bytes * x.tokens * x.hidden / seq_split, kKorthikantiSection4);
      g.add("final norm statistics (fp32)", x.norm_stats * x.tokens / seq_split, kKorthikantiSection4);
      g.add("output layer input", c.element_bytes * x.tokens * x.hidden / seq_split, kKorthikantiSection4);
      break;
    }
    case Impl::torch_nn: {
      const double vocab = c.vocab;
      g.add("final norm input (fp32)", 4.0 * x.tokens * x.hidden, kTorchNn);
      g.add("final norm statistics (fp32)", 8.0 * x.tokens, kTorchNn);
      g.add("output layer input", c.element_bytes * x.tokens * x.hidden, kTorchNn);
      if (!c.fp32_compute) g.add("autocast bf16 copy of the output weight", 2.0 * vocab * x.hidden, kTorchNn);
      g.add("nll_loss total_weight", 4.0, kTorchNn);
      break;
    }
    case Impl::hf: {
      g.add("final RMSNorm fp32 input copy", 4.0 * x.tokens * x.hidden, kHf);
      g.add("final norm statistics (fp32)", 4.0 * x.tokens, kHf);
      g.add("final norm normalized and output (lm_head input)", 2.0 * c.element_bytes * x.tokens * x.hidden, kHf);
      break;
    }
  }
  return g.total() - before;
}

double logits_bytes(const ActivationContext& c, const TrainingConfig& training, Ledger& g) {
  if (training.loss == Loss::chunked) return 0;  // fused/chunked linear + cross-entropy never materializes them
  const double before = g.total();
  const double tokens = c.seq_local * c.micro_batch;
  const double logits = tokens * c.vocab;
  switch (c.impl) {
    case Impl::megatron:
      if (training.loss == Loss::fused_te) {
        g.add("logits (16-bit, kept; the gradient overwrites them)", c.element_bytes * logits / c.tp,
              kTeCrossEntropy);
        g.add("cross-entropy row statistics and loss (fp32)", 16.0 * tokens, kTeCrossEntropy);
        break;
      }
      // Unfused and Megatron's own fused kernel alike upcast the 16-bit logits to an fp32 softmax kept for backward.
      g.add("output-layer logits (transient during the loss)", c.element_bytes * logits / c.tp,
            training.loss == Loss::fused_native ? kMegatronFusedCrossEntropy : kMegatronCrossEntropy);
      g.add("cross-entropy softmax (fp32)", 4.0 * logits / c.tp,
            training.loss == Loss::fused_native ? kMegatronFusedCrossEntropy : kMegatronCrossEntropy);
      break;
    case Impl::torch_nn:
      g.add("log_softmax output (fp32)", 4.0 * logits, kTorchNn);
      break;
    case Impl::hf:
      g.add("logits returned by the model", c.element_bytes * logits, kHf);
      g.add("fp32 upcast of the logits (transient during the loss)", 4.0 * logits, "transformers loss_utils.py");
      g.add("log_softmax output (fp32)", 4.0 * logits, "torch cross_entropy");
      break;
  }
  return g.total() - before;
}

double output_backward_bytes(const ActivationContext& c, const TrainingConfig& training, Ledger& g) {
  const double before = g.total();
  const double tokens = c.seq_local * c.micro_batch;
  if (training.loss != Loss::chunked)
    g.add("gradient of the logits (16-bit)", c.element_bytes * tokens * c.vocab / c.tp, kMegatronLinear);
  g.add("gradient of the output layer's input (whole sequence)",
        c.element_bytes * tokens * static_cast<double>(c.model->hidden), kMegatronLinear);
  g.add("output layer's weight-gradient tensor (new each backward)",
        c.element_bytes * c.vocab / c.tp * static_cast<double>(c.model->hidden), kMegatronLinear);
  return g.total() - before;
}

}  // namespace gpuplan::memory
