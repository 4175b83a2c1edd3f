// A cheap floor on the step time for the search's pruning: the linear-layer FLOPs at the best GEMM efficiency.
#include <algorithm>

#include "memory/internal.hpp"
#include "model/param_parts.hpp"
#include "perf/step_model.hpp"

namespace gpuplan {

namespace perf {

double step_time_lower_bound_s(const EstimateInputs& in, const PerfConstants& perf) {
  // Only the linear-layer GEMMs of the decoder layers, forward + backward (2x) + recomputed forward, each at the
  // dense peak times gemm_max_efficiency: estimate_step never prices a GEMM faster (the smooth roofline is at
  // least the compute time, wave utilization is at most 1, and every other term adds time). The layers are
  // spread evenly over the stages, which the slowest stage never beats.
  if (!in.memory.model) return 0;
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  const Layout& l = in.memory.layout;
  const double tp = static_cast<double>(std::max<std::int64_t>(1, l.tp));
  const double pp = static_cast<double>(std::max<std::int64_t>(1, l.pp));
  const double cp = static_cast<double>(std::max<std::int64_t>(1, l.cp));
  const double etp = static_cast<double>(l.etp > 0 ? l.etp : std::max<std::int64_t>(1, l.tp));
  std::int64_t dp = l.dp;
  if (dp <= 0) dp = l.gpus > 0 ? std::max<std::int64_t>(1, l.gpus / std::max<std::int64_t>(1, l.tp * l.pp * l.cp)) : 1;
  const double mb = tr.global_batch > 0 && tr.micro_batch > 0
                        ? static_cast<double>(tr.global_batch / (tr.micro_batch * dp))
                        : 1.0;
  // With a measured table no GEMM beats its best entry (the lookup interpolates between entries).
  // A calibrated scale applies to both, capped at the peak as the compute model caps it.
  const double efficiency = std::min(
      1.0, (perf.gemm_table ? perf.gemm_table->best : perf.gemm_max_efficiency) * perf.compute_efficiency_scale);
  const double peak = peak_tflops(tr, in.gpu) * 1e12;
  if (!(peak > 0) || !(efficiency > 0)) return 0;

  const double T = static_cast<double>(tr.micro_batch) * static_cast<double>(tr.seq_len) / cp;
  const double h = static_cast<double>(m.hidden);
  const double up = m.mlp == MlpKind::gated ? 2 : 1;
  const double attn = static_cast<double>(detail::attention_params(m, detail::Biases::exclude)) / tp;
  const double dense_flops = 2 * T * (attn + (up + 1) * static_cast<double>(m.ffn_hidden) * h / tp);
  double layer_flops = dense_flops;
  if (m.is_moe()) {
    // Balanced routing: each token visits top_k experts (at least; more rows per expert when ep exceeds experts),
    // fewer where a capacity factor under 1 drops copies. The router sees the TP rank's share of the sequence
    // under sequence parallelism.
    const double kept = std::min(1.0, memory::routed_share(tr));
    const double router_tokens = l.sequence_parallel && l.tp > 1 ? T / tp : T;
    double moe_flops = 2 * T * (attn + kept * static_cast<double>(m.moe.top_k) * (up + 1) *
                                           static_cast<double>(m.moe.expert_ffn_hidden) * h / etp) +
                       2 * router_tokens * static_cast<double>(m.moe.routed_experts) * h;
    if (m.moe.shared_experts > 0)
      moe_flops += 2 * T * (up + 1) *
                   static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden) * h / tp;
    layer_flops = std::min(dense_flops, moe_flops);
  }
  const double layers = static_cast<double>(m.layers) / pp;  // the most loaded stage holds at least this many
  double recomputed = 0;
  if (l.recompute == Recompute::full)
    recomputed = l.recompute_layers < 0 ? layers : std::min(layers, static_cast<double>(l.recompute_layers));
  return mb * (3 * layers + recomputed) * layer_flops / (peak * efficiency);
}

}  // namespace perf

double step_time_lower_bound_s(const EstimateInputs& in) {
  return perf::step_time_lower_bound_s(in, in.perf ? *in.perf : perf_constants(in.gpu));
}

}  // namespace gpuplan
