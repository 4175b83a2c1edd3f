// Any question by name, with its request and result as JSON: what the Python module and the web page call.
#include "gpuplan/api.hpp"

namespace gpuplan::api {

nlohmann::ordered_json run_json(Question question, const nlohmann::json& request, ProgressCallback progress,
                                const ParallelRunner* runner) {
  switch (question) {
    case Question::model: return to_json(run(from_json<ModelRequest>(request)));
    case Question::memory: return to_json(run(from_json<MemoryRequest>(request)));
    case Question::estimate: return to_json(run(from_json<EstimateRequest>(request)));
    case Question::plan: return to_json(run(from_json<PlanRequest>(request), std::move(progress), runner));
    case Question::comm: return to_json(run(from_json<CommRequest>(request)));
    case Question::calibrate: return to_json(run(from_json<CalibrateRequest>(request)));
    case Question::topo: return to_json(run(from_json<TopoRequest>(request)));
    case Question::catalog: return to_json(run(from_json<CatalogRequest>(request)));
    case Question::size: return to_json(run(from_json<SizeRequest>(request), std::move(progress), runner));
  }
  return {};
}

}  // namespace gpuplan::api
