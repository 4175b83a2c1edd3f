// The user's own measurements applied to a job: compute constants (`perf`, as `gpuplan calibrate --runs` writes
// them) and collective tiers (`comm_calibration`, as `gpuplan comm --calibrate` writes them), the same way for
// estimate and plan.
#include "api/resolve.hpp"
#include "gpuplan/comm.hpp"

namespace gpuplan::api::detail {

PerfConstants apply_calibration_files(const std::vector<FileInput>& perf, const std::optional<FileInput>& comm,
                                      const GpuSpec& gpu, Fabric& fabric) {
  if (comm) apply_comm_overrides(fabric, file_text(*comm, "timing.comm_calibration"), comm->path);
  std::vector<std::pair<std::string, std::string>> overlays;
  for (const auto& f : perf) overlays.emplace_back(f.path, file_text(f, "timing.perf"));
  return perf_constants(gpu, overlays);
}

}  // namespace gpuplan::api::detail
