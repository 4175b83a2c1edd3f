// The results' JSON: the keys `gpuplan ... --json` prints, member for member.
#include <fmt/format.h>

#include "gpuplan/perf_fit.hpp"
#include "api/result_members.hpp"
#include "gpuplan/api.hpp"
#include "util/json_text.hpp"

namespace gpuplan::api {

using detail::members_from_json;
using detail::members_to_json;

nlohmann::ordered_json to_json(const ModelResult& r) { return members_to_json(r); }
nlohmann::ordered_json to_json(const MemoryResult& r) { return members_to_json(r); }
nlohmann::ordered_json to_json(const EstimateResult& r) { return members_to_json(r); }
nlohmann::ordered_json to_json(const PlanResult& r) { return members_to_json(r); }
nlohmann::ordered_json to_json(const CalibrateResult& r) { return members_to_json(r); }
nlohmann::ordered_json to_json(const TopoResult& r) { return members_to_json(r); }
nlohmann::ordered_json to_json(const SizeResult& r) { return members_to_json(r); }

template <> ModelResult from_json<ModelResult>(const nlohmann::json& j) { return members_from_json<ModelResult>(j); }
template <> MemoryResult from_json<MemoryResult>(const nlohmann::json& j) { return members_from_json<MemoryResult>(j); }
template <> EstimateResult from_json<EstimateResult>(const nlohmann::json& j) {
  return members_from_json<EstimateResult>(j);
}
template <> PlanResult from_json<PlanResult>(const nlohmann::json& j) { return members_from_json<PlanResult>(j); }
template <> CalibrateResult from_json<CalibrateResult>(const nlohmann::json& j) {
  return members_from_json<CalibrateResult>(j);
}
template <> TopoResult from_json<TopoResult>(const nlohmann::json& j) { return members_from_json<TopoResult>(j); }
template <> SizeResult from_json<SizeResult>(const nlohmann::json& j) { return members_from_json<SizeResult>(j); }

// One size puts its row's keys beside the collective's (as nccl-tests users read one line); a sweep lists them.
nlohmann::ordered_json to_json(const CommResult& r) {
  nlohmann::ordered_json j;
  j["collective"] = r.collective;
  j["ranks"] = r.ranks;
  j["ranks_per_node"] = r.ranks_per_node;
  j["nodes_spanned"] = r.nodes_spanned;
  j["concurrent_groups_per_node"] = r.concurrent_groups_per_node;
  j["fabric"] = r.fabric;
  j["library"] = r.library;
  j["busbw_factor"] = r.busbw_factor;
  if (r.results.size() == 1) j.update(members_to_json(r.results.front()));
  else j["results"] = members_to_json(r.results);
  return j;
}

template <> CommResult from_json<CommResult>(const nlohmann::json& j) {
  CommResult r;
  detail::read(j.at("collective"), r.collective, "collective");
  detail::read(j.at("ranks"), r.ranks, "ranks");
  detail::read(j.at("ranks_per_node"), r.ranks_per_node, "ranks_per_node");
  detail::read(j.at("nodes_spanned"), r.nodes_spanned, "nodes_spanned");
  detail::read(j.at("concurrent_groups_per_node"), r.concurrent_groups_per_node, "concurrent_groups_per_node");
  detail::read(j.at("fabric"), r.fabric, "fabric");
  detail::read(j.at("library"), r.library, "library");
  detail::read(j.at("busbw_factor"), r.busbw_factor, "busbw_factor");
  if (j.contains("results")) detail::read(j.at("results"), r.results, "results");
  else r.results.push_back(members_from_json<CollectiveRow>(j));
  return r;
}

std::string calibration_file_text(const CalibrateResult& r) {
  if (r.runs_fit) {
    std::vector<std::pair<std::string, double>> values;
    for (const FittedConstant& c : r.runs_fit->constants) values.emplace_back(c.name, c.after);
    return perf_overlay_json(
        r.runs_fit->gpu, values,
        fmt::format("gpuplan calibrate --runs: fitted to {} measured runs (leave-one-out MAPE {:.1f}% before, "
                    "{:.1f}% after)",
                    r.runs_fit->runs.size(), 100 * r.runs_fit->held_out_mape_before,
                    100 * r.runs_fit->held_out_mape_after),
        "Step-time constants fitted to measured runs by gpuplan calibrate --runs. Use with: gpuplan estimate "
        "--perf FILE (or plan, size)");
  }
  return gpuplan::detail::json_text(members_to_json(r.calibration), 2) + "\n";
}

}  // namespace gpuplan::api
