// Throughput and MFU as reported, with the warnings that say when a prediction is known to be optimistic.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "api/builders.hpp"

namespace gpuplan::api::detail {

namespace {
constexpr const char* kFlopConvention =
    "model FLOPs = flops_per_token(model, seq_len).training x tokens (Megatron-LM / Narayanan et al. / PaLM "
    "convention: matmuls only, backward = 2 x forward, full s x s attention); mfu_causal halves the attention "
    "score and context FLOPs, as a causal kernel computes them; HFU adds the recomputed forward, hfu_causal counts it "
    "causally too";

// Compared counting causal attention's FLOPs on both sides: at long sequences the full-attention MFU grows with
// FLOPs no kernel computes.
std::optional<std::string> mfu_warning(const StepEstimate& e, const GpuSpec& gpu) {
  if (gpu.best_published_mfu_causal <= 0 || e.mfu_causal <= gpu.best_published_mfu_causal) return std::nullopt;
  const auto source = gpu.field_sources.find("best_published_mfu_causal");
  return fmt::format(
      "MFU {:.1f} % counting causal attention's FLOPs is above the best published for {} ({:.1f} %, {}): treat "
      "this step time as optimistic",
      100 * e.mfu_causal, gpu.name, 100 * gpu.best_published_mfu_causal,
      source == gpu.field_sources.end() ? "catalog" : source->second);
}

}  // namespace

// Megatron-Core's MoE brings each layer's token counts to the host unless every expert is padded to its capacity
// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess): dropless, the
// all-to-all's input and output splits ("before_ep_alltoall"); dropping tokens without padding, the permutation's
// token count ("before_permutation_1"); DeepEP's dispatch returns its received counts as a host list. So the host
// cannot run ahead of the GPU, and a MoE layer's host work (router, dispatcher, one launch per local expert and
// GEMM) is priced only by its kernel count. NeMo 25.11's published dropless runs (docs/estimate.md) ran slower than
// predicted, later releases faster.
std::optional<std::string> moe_host_sync_warning(const ModelConfig& model, const TrainingConfig& training,
                                                 Framework framework) {
  if (!model.is_moe() || training.moe_pad_to_capacity || !runs_megatron_core(framework)) return std::nullopt;
  const bool dropless = !(training.moe_capacity_factor > 0);
  return fmt::format(
      "{} under Megatron-Core: the host synchronizes with the GPU in every MoE layer ({}) and the layer's host work "
      "is priced only by its kernels; NeMo 25.11's published dropless runs (Qwen3-30B-A3B, Qwen3-235B-A22B, "
      "DeepSeek-V3 on H100, B200 and GB200) took 1.2 to 2.3x the time this model predicts, later releases with CUDA "
      "graphs and HybridEP ran faster (docs/estimate.md): for MoE the step time depends on the release and the "
      "dispatcher more than this model knows (padding every expert to its capacity, --moe-capacity-factor with "
      "--moe-pad-to-capacity, removes the synchronization)",
      dropless ? "dropless MoE" : "MoE dropping tokens without padding",
      dropless ? "for the token counts the dispatch needs" : "for the count of tokens kept");
}

ThroughputReport throughput_report(const StepEstimate& e, const EstimateInputs& in) {
  ThroughputReport out{e.tokens_per_s, e.tokens_per_s_per_gpu, e.model_tflops_per_gpu, e.hardware_tflops_per_gpu,
                       e.mfu,          e.hfu,                  e.peak_tflops,          kFlopConvention,
                       e.mfu_causal,   e.hfu_causal,           {}};
  if (auto w = mfu_warning(e, in.gpu)) out.warnings.push_back(std::move(*w));
  const MemoryInputs& job = in.memory;
  if (job.model)
    if (auto w = moe_host_sync_warning(*job.model, job.training, job.layout.framework))
      out.warnings.push_back(std::move(*w));
  return out;
}

}  // namespace gpuplan::api::detail
