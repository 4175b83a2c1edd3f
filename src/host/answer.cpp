// The questions answered by the host: files read, the NVIDIA driver, the calibration written, threads.
#include "gpuplan/host.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::api {

namespace {

template <typename Request>
Request loaded(Request request) {
  load_files(request);
  return request;
}

}  // namespace

ModelResult answer(ModelRequest r) { return run(loaded(std::move(r))); }
MemoryResult answer(MemoryRequest r) { return run(loaded(std::move(r))); }

EstimateResult answer(EstimateRequest r) {
  const std::optional<std::string> out = r.launch.out;
  EstimateResult result = run(loaded(std::move(r)));
  if (out && result.launch_files) result.launch_written = write_launch_files(*result.launch_files, *out);
  return result;
}
CommResult answer(CommRequest r) { return run(loaded(std::move(r))); }
CatalogResult answer(CatalogRequest r) { return run(loaded(std::move(r))); }

PlanResult answer(PlanRequest r, ProgressCallback progress) {
  const ThreadRunner threads;
  const std::optional<std::string> out = r.launch.out;
  PlanResult result = run(loaded(std::move(r)), std::move(progress), &threads);
  if (out && result.launch_files) result.launch_written = write_launch_files(*result.launch_files, *out);
  return result;
}

SizeResult answer(SizeRequest r, ProgressCallback progress) {
  const ThreadRunner threads;
  const std::optional<std::string> chart = r.chart;
  SizeResult result = run(loaded(std::move(r)), std::move(progress), &threads);
  if (chart) {
    write_text_file(*chart, result.chart_svg.value_or(""), "chart");
    result.chart_written = *chart;
  }
  return result;
}

CalibrateResult answer(CalibrateRequest r) {
  const std::optional<std::string> out = r.out;
  CalibrateResult result = run(loaded(std::move(r)));
  if (out) {
    write_text_file(*out, calibration_file_text(result), "out");
    result.written = *out;
  }
  return result;
}

TopoResult answer(TopoRequest r) {
  load_files(r);
  if (!r.topology) return run(r, discover_topology_nvml());  // the machine this runs on
  return run(r);
}

nlohmann::ordered_json answer_json(Question question, const nlohmann::json& given, ProgressCallback progress) {
  const nlohmann::json request = with_launch_file(given);
  switch (question) {
    case Question::model: return to_json(answer(from_json<ModelRequest>(request)));
    case Question::memory: return to_json(answer(from_json<MemoryRequest>(request)));
    case Question::estimate: return to_json(answer(from_json<EstimateRequest>(request)));
    case Question::plan: return to_json(answer(from_json<PlanRequest>(request), std::move(progress)));
    case Question::comm: return to_json(answer(from_json<CommRequest>(request)));
    case Question::calibrate: return to_json(answer(from_json<CalibrateRequest>(request)));
    case Question::topo: return to_json(answer(from_json<TopoRequest>(request)));
    case Question::catalog: return to_json(answer(from_json<CatalogRequest>(request)));
    case Question::size: return to_json(answer(from_json<SizeRequest>(request), std::move(progress)));
  }
  return {};
}

}  // namespace gpuplan::api
