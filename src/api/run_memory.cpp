// gpuplan memory and gpuplan estimate.
#include <fmt/format.h>

#include "api/builders.hpp"
#include "api/fields.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::api {

MemoryResult run(const MemoryRequest& r) {
  detail::check_bounds(r);
  const auto catalog_owner = detail::resolve_catalog(r.hardware.catalog, "hardware.catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  const MemoryInputs in =
      detail::resolve_memory_inputs(r.model, r.overrides, r.params, r.training, r.layout, r.hardware, catalog);
  return detail::memory_result(in, r.all_stages);
}

namespace {

EstimateInputs estimate_inputs(const EstimateRequest& r, ClusterReport& report) {
  parse_order(r.timing.order);  // a bad placement is reported before anything else
  const auto catalog_owner = detail::resolve_catalog(r.hardware.catalog, "hardware.catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  EstimateInputs in;
  in.memory = detail::resolve_memory_inputs(r.model, r.overrides, r.params, r.training, r.layout, r.hardware, catalog);
  const Layout layout = resolve_layout(in.memory);
  const detail::ResolvedCluster cluster = detail::resolve_cluster(r.cluster, catalog, r.hardware.gpu, layout.gpus);
  if (!cluster.gpu_known) throw InputError("gpu", "(none)", "a GPU catalog name with a topology output");
  if (!r.hardware.gpu && !r.hardware.gpu_memory) in.memory.capacity_bytes = cluster.gpu.usable_memory_bytes;
  in.gpu = cluster.gpu;
  in.fabric = cluster.fabric;
  if (r.timing.comm_calibration)
    apply_comm_overrides(in.fabric, detail::file_text(*r.timing.comm_calibration, "timing.comm_calibration"),
                         r.timing.comm_calibration->path);
  in.time.tp_overlap = r.timing.tp_overlap;
  in.time.dp_overlap = r.timing.dp_overlap;
  in.time.order = r.timing.order;
  std::vector<std::pair<std::string, std::string>> overlays;
  for (const auto& f : r.timing.perf) overlays.emplace_back(f.path, detail::file_text(f, "timing.perf"));
  in.perf = perf_constants(in.gpu, overlays);
  report = ClusterReport{cluster.origin, in.gpu.name,    in.fabric.nodes,  in.fabric.gpus_per_node,
                         in.time.order,  in.perf->source, in.fabric.calibration_sources};
  return in;
}

}  // namespace

EstimateResult run(const EstimateRequest& r) {
  detail::check_bounds(r);
  EstimateResult out;
  const EstimateInputs in = estimate_inputs(r, out.cluster);
  const StepEstimate e = estimate_step(in);
  out.time = detail::time_report(e);
  out.throughput = detail::throughput_report(e);
  out.memory = detail::memory_result(in.memory, r.all_stages);
  return out;
}

}  // namespace gpuplan::api
