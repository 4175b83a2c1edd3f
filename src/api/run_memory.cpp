// gpuplan memory and gpuplan estimate.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "api/builders.hpp"
#include "api/fields.hpp"
#include "api/launch_beside.hpp"
#include "api/launch_results.hpp"
#include "api/resolve.hpp"
#include "framework/rules.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::api {

namespace {

MemoryResult memory_of(const MemoryRequest& r) {
  detail::check_bounds(r);
  const auto catalog_owner = detail::resolve_catalog(r.hardware.catalog, "hardware.catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  MemoryInputs in =
      detail::resolve_memory_inputs(r.model, r.overrides, r.params, r.training, r.layout, r.hardware, catalog);
  const SystemSpec* system = r.system ? &catalog.system(*r.system) : nullptr;
  if (system != nullptr && !r.hardware.gpu && !r.hardware.gpu_memory) {
    // The system's GPU, as estimate and plan take it.
    in.capacity_bytes = catalog.gpu(system->gpu).usable_memory_bytes;
    in.gpu = system->gpu;
    in.gpu_assumed = false;
    in.gpu_fp8_any_layout = catalog.gpu(system->gpu).fp8_gemm_any_layout();
  }
  in.node = detail::resolve_node_storage(system, r.gpus_per_node.value_or(0), r.hardware);
  MemoryResult result = detail::memory_result(in, r.all_stages);
  result.launch_config = detail::launch_report(r.launch);
  return result;
}

// Without layout.gpus or layout.dp, data parallelism fills the cluster: every GPU of the nodes asked for (or of
// the nodes the model-parallel group needs), as a launcher started on those nodes would use them.
LayoutOptions fill_cluster(const LayoutOptions& layout, const detail::ResolvedCluster& cluster,
                           std::vector<std::string>& warnings) {
  LayoutOptions filled = layout;
  if (layout.gpus || layout.dp) return filled;
  const std::int64_t group = layout.tp * layout.pp * layout.cp;  // each at most 65536: no overflow
  const std::int64_t cluster_gpus = static_cast<std::int64_t>(cluster.fabric.nodes) * cluster.fabric.gpus_per_node;
  if (cluster_gpus <= group) return filled;
  filled.gpus = cluster_gpus / group * group;
  if (*filled.gpus != cluster_gpus)
    warnings.push_back(fmt::format("data parallelism uses {} of the cluster's {} GPUs: the model-parallel group "
                                   "(tp x pp x cp = {}) does not divide them",
                                   *filled.gpus, cluster_gpus, group));
  return filled;
}

// Where the flash attention's efficiency comes from: PyTorch's scaled_dot_product_attention, the flash-attn
// package's FlashAttention-2 kernels under Transformer Engine (priced alike), or Transformer Engine's own choice.
std::string attention_source(const Layout& layout, const PerfConstants& perf) {
  if (runs_torch_sdpa(layout)) return perf.sdpa_attention_efficiency_source;
  if (layout.attention_backend == AttentionBackend::flash)
    return "flash-attn through Transformer Engine (attention_backend flash), priced as " +
           perf.sdpa_attention_efficiency_source;
  return perf.attention_efficiency_source;
}

MemoryInputs filled_job(const EstimateRequest& r, const HardwareCatalog& catalog, const LayoutOptions& layout) {
  try {
    return detail::resolve_memory_inputs(r.model, r.overrides, r.params, r.training, layout, r.hardware, catalog);
  } catch (const InputError& e) {
    if (e.field() != "training.global_batch" || !layout.gpus || r.layout.gpus) throw;
    // The batch does not divide by the data parallelism the cluster gave; a fault of the layout the user asked
    // for (a TP that does not divide the heads) comes first, as it would without the cluster.
    try {
      detail::resolve_memory_inputs(r.model, r.overrides, r.params, r.training, r.layout, r.hardware, catalog);
    } catch (const InputError& asked) {
      if (asked.field() != "training.global_batch") throw;
    }
    throw InputError(e.field(), e.given(),
                     fmt::format("{} (data parallelism fills the cluster's {} GPUs; give layout.dp or layout.gpus "
                                 "to use fewer)",
                                 e.accepted(), *layout.gpus));
  }
}

EstimateInputs estimate_inputs(const EstimateRequest& r, ClusterReport& report, std::vector<std::string>& warnings) {
  parse_order(r.timing.order);  // a bad placement is reported before anything else
  const auto catalog_owner = detail::resolve_catalog(r.hardware.catalog, "hardware.catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  const LayoutOptions& asked = r.layout;
  // In floating point: the degrees are each bounded, their product is not; the cluster rejects the absurd.
  const double group = static_cast<double>(asked.tp) * static_cast<double>(asked.pp) * static_cast<double>(asked.cp) *
                       static_cast<double>(asked.dp.value_or(1));
  const auto ranks = asked.gpus.value_or(static_cast<std::int64_t>(std::min(group, 1e15)));
  const detail::ResolvedCluster cluster = detail::resolve_cluster(r.cluster, catalog, r.hardware.gpu, ranks);
  EstimateInputs in;
  in.memory = filled_job(r, catalog, fill_cluster(asked, cluster, warnings));
  detail::require_known_gpu(cluster);
  if (!r.hardware.gpu && !r.hardware.gpu_memory) {
    in.memory.capacity_bytes = cluster.gpu.usable_memory_bytes;
    in.memory.gpu = cluster.gpu.name;
    in.memory.gpu_assumed = false;
  }
  in.gpu = cluster.gpu;
  in.memory.gpu_fp8_any_layout = cluster.gpu.fp8_gemm_any_layout();
  in.fabric = cluster.fabric;
  in.memory.node = detail::resolve_node_storage(&cluster.system, cluster.fabric.gpus_per_node, r.hardware);
  in.perf = detail::apply_calibration_files(r.timing.perf, r.timing.comm_calibration, in.gpu, in.fabric);
  in.time.tp_overlap = r.timing.tp_overlap;
  in.time.dp_overlap = r.timing.dp_overlap;
  in.time.pp_overlap = r.timing.pp_overlap;
  in.time.order = r.timing.order;
  in.time.tp_overlap_sms = r.timing.tp_overlap_sms;
  if (r.timing.tp_overlap_sms) check_reserved_sms(*r.timing.tp_overlap_sms, *in.perf, in.gpu, "timing.tp_overlap_sms");
  const bool fp8 = in.memory.training.precision == Precision::fp8 && in.gpu.has_dtype("fp8");
  report = ClusterReport{cluster.origin, in.gpu.name,    in.fabric.nodes,  in.fabric.gpus_per_node,
                         in.time.order,  in.perf->source, in.fabric.calibration_sources,
                         fp8 ? in.perf->fp8_gemm_efficiency_source() : in.perf->gemm_efficiency_source(),
                         attention_source(in.memory.layout, *in.perf)};
  return in;
}

BoundsReport bounds_report(const EstimateInputs& in, double step_s) {
  const PhysicalBounds b = physical_bounds(in);
  BoundsReport out{b.compute_s, b.flops_per_gpu, b.memory_s, b.hbm_bytes_per_gpu, b.network_s, b.node_import_bytes,
                   in.fabric.nic_per_gpu_GBps * std::max(1, in.fabric.gpus_per_node), b.binding, 0};
  const double binding = std::max({b.compute_s, b.memory_s, b.network_s});
  out.step_over_binding = binding > 0 ? step_s / binding : 0;
  return out;
}

}  // namespace

EstimateInputs detail::estimate_job_inputs(const EstimateRequest& r) {
  ClusterReport report;
  std::vector<std::string> warnings;
  return estimate_inputs(r, report, warnings);
}

namespace {

EstimateResult estimate_of(const EstimateRequest& r) {
  detail::check_bounds(r);
  EstimateResult out;
  std::vector<std::string> warnings;
  const EstimateInputs in = estimate_inputs(r, out.cluster, warnings);
  const Layout layout = resolve_layout(in.memory);
  framework::check_job({in.memory.model ? &*in.memory.model : nullptr, &in.memory.training, &layout, in.time.tp_overlap});
  const StepEstimate e = estimate_step(in);
  out.time = detail::time_report(e);
  out.throughput = detail::throughput_report(e, in);
  out.memory = detail::memory_result(in.memory, r.all_stages);
  out.memory.warnings.insert(out.memory.warnings.begin(), warnings.begin(), warnings.end());
  out.memory.launch_config = detail::launch_report(r.launch);
  if (r.launch.emit && !in.memory.model) throw InputError("launch.emit", "with params", "a model (launch files describe it)");
  out.launch_files = detail::launch_files(r.launch, {r.model.name_or_path, in.memory, in.time,
                                                     gpus_per_host(in.memory.node, in.fabric.gpus_per_node),
                                                     e.step_s, out.memory.per_gpu.total});
  if (r.explain && in.memory.model) out.bounds = bounds_report(in, e.step_s);
  return out;
}

}  // namespace

MemoryResult run(const MemoryRequest& r) {
  return detail::naming_launch_file(r.launch, [&] { return memory_of(r); });
}

EstimateResult run(const EstimateRequest& r) {
  return detail::naming_launch_file(r.launch, [&] { return estimate_of(r); });
}

}  // namespace gpuplan::api
