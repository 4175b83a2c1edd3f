// gpuplan comm --calibrate: the collective model fitted to nccl-tests outputs, and how much closer it comes.
#include <cmath>

#include "api/fields.hpp"
#include "api/resolve.hpp"
#include "api/result_members.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::api {

namespace detail {
Collective parse_collective(const std::string& text);
ResolvedCluster comm_fabric(const ClusterOptions& cluster, const HardwareCatalog& catalog,
                            const std::optional<std::string>& gpu, std::int64_t ranks, std::int64_t ranks_per_node,
                            const std::optional<FileInput>& calibration);
CalibrateResult calibrate_runs(const CalibrateRequest& request);   // run_calibrate_runs.cpp
}  // namespace detail

namespace {

// The model against one log's rows, before and after calibration: relative errors of the times.
std::optional<CalibrationComparison> compare(const NcclTestsLog& log, const Fabric& model, const Fabric& calibrated) {
  const int per_node = model.gpus_per_node;
  GroupPlacement g;
  g.ranks = log.ranks;
  g.ranks_per_node = std::min<std::int64_t>(log.ranks, per_node);
  if (static_cast<std::int64_t>(model.nodes) * g.ranks_per_node < log.ranks) return std::nullopt;
  CalibrationComparison c;
  c.file = log.origin;
  c.ranks = log.ranks;
  for (const auto& row : log.rows) {
    const double before = collective_time_s(model, log.collective, row.size_bytes, g) * 1e6;
    const double after = collective_time_s(calibrated, log.collective, row.size_bytes, g) * 1e6;
    const double error_before = std::fabs(before - row.time_us) / row.time_us;
    const double error_after = std::fabs(after - row.time_us) / row.time_us;
    c.model_mean_rel_error += error_before;
    c.calibrated_mean_rel_error += error_after;
    c.model_max_rel_error = std::max(c.model_max_rel_error, error_before);
    c.calibrated_max_rel_error = std::max(c.calibrated_max_rel_error, error_after);
    ++c.rows;
  }
  if (c.rows == 0) return std::nullopt;
  c.model_mean_rel_error /= static_cast<double>(c.rows);
  c.calibrated_mean_rel_error /= static_cast<double>(c.rows);
  return c;
}

CalibrationFileReport file_report(const NcclTestsLog& log) {
  return CalibrationFileReport{log.origin, to_string(log.collective), log.ranks, log.hosts,
                               static_cast<std::int64_t>(log.rows.size()), log.warnings};
}

}  // namespace

CalibrateResult run(const CalibrateRequest& r) {
  detail::check_bounds(r);
  if (!r.runs.empty()) return detail::calibrate_runs(r);
  std::optional<Collective> hint;
  if (r.collective) hint = detail::parse_collective(*r.collective);
  if (r.logs.empty())
    throw InputError("logs", "(none)", "nccl-tests outputs to fit, or measured runs (--runs FILE...)");
  const auto catalog_owner = detail::resolve_catalog(r.catalog, "catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  // The fabric, when known, sets the node size that tells intra- from inter-node logs, and is what the
  // measurements are compared with.
  std::optional<detail::ResolvedCluster> target;
  if (r.cluster.system || r.cluster.topology)
    target = detail::comm_fabric(r.cluster, catalog, r.gpu, 1, 0, std::nullopt);
  std::vector<NcclTestsLog> logs;
  for (const auto& f : r.logs)
    logs.push_back(parse_nccl_tests(detail::file_text(f, "logs"), f.path, hint,
                                    r.ranks && *r.ranks > 0 ? static_cast<int>(*r.ranks) : 0));
  const std::string document = comm_calibration_json(calibrate_comm(logs, target ? target->fabric.gpus_per_node : 0));
  CalibrateResult out;
  out.calibration = detail::members_from_json<CalibrationDocument>(nlohmann::json::parse(document));
  for (const auto& log : logs) out.files.push_back(file_report(log));
  if (target) {
    Fabric calibrated = target->fabric;
    apply_comm_overrides(calibrated, document, r.out ? *r.out : "calibration");
    out.comparison.emplace();
    for (const auto& log : logs)
      if (auto c = compare(log, target->fabric, calibrated)) out.comparison->push_back(*c);
    if (out.comparison->empty()) out.comparison.reset();
    else out.compared_on = target->name;
  }
  return out;
}

}  // namespace gpuplan::api
