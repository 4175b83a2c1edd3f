// What `gpuplan estimate` prints: the step-time breakdown, throughput, MFU and the memory verdict.
#include <fmt/format.h>

#include "report/launch_text.hpp"
#include "report/memory_text.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api {

namespace {

// " (host memory)": what is short when it does not fit.
std::string shortfall_text(const MemoryResult& m) {
  if (!m.does_not_fit || m.does_not_fit->empty()) return "";
  std::string out;
  for (const auto& what : *m.does_not_fit) out += (out.empty() ? "" : ", ") + what;
  return " (" + out + ")";
}

// One node's host memory or NVMe, when the job keeps something there.
std::string storage_text(const char* what, const NodeStorageReport& s) {
  if (!s.per_gpu) return "";
  if (!s.gpus_per_node)
    return fmt::format("{}: {} per GPU, GPUs per node not known: not checked\n", what,
                       format_bytes(static_cast<double>(*s.per_gpu)));
  const std::string needs = fmt::format("{}: {} per node ({} x {} per GPU)", what,
                                        format_bytes(static_cast<double>(*s.needed_per_node)),
                                        format_quantity(*s.gpus_per_node, "GPU", "GPUs"),
                                        format_bytes(static_cast<double>(*s.per_gpu)));
  if (!s.capacity_per_node) return needs + ", capacity not known: not checked\n";
  return fmt::format("{} of {}: {}\n", needs, format_bytes(static_cast<double>(*s.capacity_per_node)),
                     *s.fits ? "fits" : "DOES NOT FIT");
}

// The physical bounds (--explain): each floor with the quantity behind it, the binding one marked.
std::string bounds_text(const BoundsReport& b, double step_s) {
  auto mark = [&](const char* name) { return b.binding == name ? "  <- binding" : ""; };
  std::string out = "\nPhysical bounds: no step of this layout can be faster than any of these\n";
  const double tflop = b.flops_per_gpu / 1e12;
  const std::string flops = tflop >= 1000 ? fmt::format("{:.1f} PFLOP", tflop / 1000) : fmt::format("{:.1f} TFLOP", tflop);
  out += fmt::format("  {:<9} {:>12.6f} s  {} per GPU (causal attention) at the peak{}\n", "compute", b.compute_s,
                     flops, mark("compute"));
  out += fmt::format("  {:<9} {:>12.6f} s  {} per GPU through HBM (weights read forward and backward each "
                     "microbatch, optimizer states read and written){}\n",
                     "memory", b.memory_s, format_bytes(b.hbm_bytes_per_gpu), mark("memory"));
  out += fmt::format("  {:<9} {:>12.6f} s  {} into each node per step over its NICs ({:.0f} GB/s){}\n", "network",
                     b.network_s, format_bytes(b.node_import_bytes), b.node_nic_GBps, mark("network"));
  out += fmt::format("  the step ({:.6f} s) is {:.2f}x the binding bound\n", step_s, b.step_over_binding);
  return out;
}

// The line explaining a breakdown term beneath the table, or nothing for the self-explaining ones.
std::string term_note(std::string_view name, std::int64_t gpus) {
  if (name == "slowest_gpu")
    return fmt::format("  slowest_gpu: every collective waits for the slowest of the {} GPUs, and GPUs of one kind "
                       "sustain different speeds (gpu_speed_spread in data/perf.json; Sinha et al., SC'22)\n",
                       gpus);
  if (name == "pp_comm")
    return "  pp_comm: the pipeline's sends and receives on the critical path: under the 1F1B schedule every one "
           "is waited for; under Megatron-LM's and NeMo's interleaved schedule (overlap_p2p_comm) only the fill's "
           "and the drain's, the others run beside the chunks' compute and cost what they slow it by "
           "(--no-pp-overlap waits for each)\n";
  if (name == "ep_comm")
    return "  ep_comm: each MoE layer's token dispatch and combine over the expert-parallel group, forward, backward "
           "and again for recomputed layers, not overlapped with compute (all-to-all: a copy per routed expert; "
           "--moe-dispatcher flex: a token crosses once to each other node its experts are on, only to its chosen "
           "groups' nodes under group-limited routing, and NVLink fans it out), with expert TP's gather and scatter around "
           "the experts\n";
  if (name == "nvme_offload")
    return "  nvme_offload: ZeRO-Infinity (arXiv 2104.07857) swapping through the node's NVMe, each GPU at its "
           "share of the drives (at most its host link); the optimizer's state reads and writes add to the CPU "
           "step (DeepSpeed offload_optimizer.pipeline_read/pipeline_write off: nvme_optimizer_overlap in "
           "data/perf.json), gradient writes and parameter reads hide behind compute as far as it is longer\n";
  return "";
}

}  // namespace

std::string to_text(const EstimateResult& r) {
  const MemoryResult& m = r.memory;
  std::string out = fmt::format("Step time on {} ({}, {}; peak {:.0f} TFLOP/s {})\n", r.cluster.origin,
                                format_quantity(m.layout.gpus, "GPU", "GPUs"), r.cluster.gpu,
                                r.throughput.peak_tflops_per_gpu, m.training.precision);
  out += fmt::format("  {:<18} {:>12} {:>8}\n", "component", "seconds", "share");
  for (const auto& [name, t] : r.time.breakdown) {
    if (t <= 0) continue;
    out += fmt::format("  {:<18} {:>12.6f} {:>7.1f}%\n", name, t, 100 * t / r.time.step_s);
  }
  out += fmt::format("  {:<18} {:>12.6f} {:>7.1f}%\n", "step", r.time.step_s, 100.0);
  // Terms a newcomer would not guess, explained once under the breakdown (in breakdown order).
  for (const auto& [name, t] : r.time.breakdown)
    if (t > 0) out += term_note(name, m.layout.gpus);
  out += fmt::format("GEMM efficiency: {}\n", r.cluster.gemm_efficiency_source);
  out += fmt::format("Attention efficiency: {}\n", r.cluster.attention_efficiency_source);
  if (r.bounds) out += bounds_text(*r.bounds, r.time.step_s);
  const ThroughputReport& tp = r.throughput;
  out += fmt::format("\nThroughput: {:.0f} tokens/s ({:.0f} per GPU), {} of {} per pipeline\n", tp.tokens_per_s,
                     tp.tokens_per_s_per_gpu, format_quantity(m.layout.microbatches, "microbatch", "microbatches"),
                     m.training.micro_batch);
  out += fmt::format("Model TFLOP/s per GPU: {:.1f}  MFU {:.1f}% ({:.1f}% counting causal attention's FLOPs)  "
                     "HFU {:.1f}% ({:.1f}% causal; {:.1f} TFLOP/s with recompute)\n",
                     tp.model_tflops_per_gpu, 100 * tp.mfu, 100 * tp.mfu_causal, 100 * tp.hfu,
                     100 * tp.hfu_causal, tp.hardware_tflops_per_gpu);
  for (const auto& w : tp.warnings) out += fmt::format("Warning: {}\n", w);
  out += fmt::format("Memory: {} per GPU of {} usable ({} with {:.0f}% kept free): {}\n",
                     format_bytes(static_cast<double>(m.per_gpu.total)), format_bytes(static_cast<double>(m.usable)),
                     format_gb(static_cast<double>(m.capacity)), 100 * m.memory_margin,
                     m.fits ? "fits" : "DOES NOT FIT" + shortfall_text(m));
  if (!m.fits) out += detail::suggestions_text(m, 3);  // the step time is the subject here
  out += storage_text("Host memory", m.host) + storage_text("NVMe", m.nvme);
  out += detail::framework_text(m.framework);
  for (const auto& w : m.warnings) out += fmt::format("Warning: {}\n", w);
  for (const auto& n : m.notes) out += fmt::format("Note: {}\n", n);
  return out + detail::launch_read_text(m.launch_config) + detail::launch_files_text(r.launch_files, r.launch_written);
}

}  // namespace gpuplan::api
