#pragma once
// gpuplan_host: what the front ends need beyond the pure core (gpuplan_core): reading and writing the user's
// files, the live NVIDIA driver (NVML), and threads for the layout search. The core never does any of this, so it
// builds for WebAssembly as it is. Errors are InputError naming the field the file was given for.
#include <string>
#include <string_view>

#include "gpuplan/api.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan {

// The text of a file ("-" is standard input). `field` names the option it was given for, in messages.
std::string read_text_file(const std::string& path, std::string_view field);
// Writes `text` to a file, replacing it.
void write_text_file(const std::string& path, std::string_view text, std::string_view field);

// A catalog name, a path to a config.json, or a folder holding one.
ModelConfig load_model(std::string_view name_or_path);

// The topology of the machine this runs on, from the NVIDIA driver: NVML loaded with dlopen("libnvidia-ml.so.1")
// at run time, no build dependency on CUDA. Throws InputError telling the user to pass a `nvidia-smi topo -m`
// file when the library or a driver is missing.
Topology discover_topology_nvml();

// Runs the layout search's workers on threads: as many as `threads` asks (0: one per core).
class ThreadRunner final : public ParallelRunner {
 public:
  int workers(int requested) const override;
  void run(int workers, const std::function<void(int worker)>& work) const override;
};

// search_plans with its workers on threads (PlanInputs::threads of them; 0: one per core).
PlanResult search_plans_threaded(const PlanInputs& inputs, ProgressCallback progress = {});

namespace api {

// Reads every file a request names into it: model configs (a path to a config.json or a folder holding one),
// topology and nvlink outputs, catalogs, perf constants, calibrations and nccl-tests logs. Fields that hold their
// text already are kept. Errors name the field.
void load_files(ModelRequest& request);
void load_files(MemoryRequest& request);
void load_files(EstimateRequest& request);
void load_files(PlanRequest& request);
void load_files(CommRequest& request);
void load_files(CalibrateRequest& request);
void load_files(TopoRequest& request);
void load_files(CatalogRequest& request);
void load_files(SizeRequest& request);
// A request as JSON with its launch file (`from`, flat or under `launch`) read into it, for from_json to apply
// beneath the options given beside it. Call it before from_json; load_files comes too late for this one file.
nlohmann::json with_launch_file(const nlohmann::json& request);
// Writes the launch files of a result into `folder` (created when missing); returns the paths written.
std::vector<std::string> write_launch_files(const std::vector<LaunchFileReport>& files, const std::string& folder);

// The questions answered with what only a host can do: the request's files read, the NVIDIA driver asked for
// the topology when none is given, the calibration written where `out` says, the search's workers on threads.
ModelResult answer(ModelRequest request);
MemoryResult answer(MemoryRequest request);
EstimateResult answer(EstimateRequest request);
PlanResult answer(PlanRequest request, ProgressCallback progress = {});
CommResult answer(CommRequest request);
CalibrateResult answer(CalibrateRequest request);
TopoResult answer(TopoRequest request);
CatalogResult answer(CatalogRequest request);
// The searches on threads; the chart written where `chart` says.
SizeResult answer(SizeRequest request, ProgressCallback progress = {});
nlohmann::ordered_json answer_json(Question question, const nlohmann::json& request, ProgressCallback progress = {});

}  // namespace api

}  // namespace gpuplan
