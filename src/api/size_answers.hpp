// gpuplan size after its searches: the sweep's points priced, compared and explained.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/hardware.hpp"
#include "size/sizing.hpp"

namespace gpuplan::api::detail {

// The sweep as the request gives it, checked.
struct SizeSweep {
  std::string model;                          // its name
  std::vector<std::string> warnings;          // a sequence past the model's maximum positions
  double tokens = 0;
  std::shared_ptr<const HardwareCatalog> catalog;
  std::vector<std::string> systems;
  std::vector<std::int64_t> nodes;
  std::int64_t global_batch = 0;              // sequences
  sizing::Objective objective = sizing::Objective::time;
  std::optional<double> deadline_days;
  std::map<std::string, double, std::less<>> prices;   // dollars per GPU-hour, by system
};

// One point as its search left it: the step time and layout, and the GPU's power for the energy.
struct SizedPoint {
  SizePoint point;
  std::uint64_t evaluated = 0;
  double board_power_W = 0;
  std::optional<double> host_overhead;        // from the system's datasheet power
  NamedSeconds breakdown;                     // the winner's step-time terms
};

SizeResult size_answers(const SizeRequest& request, const SizeSweep& sweep, std::vector<SizedPoint>& points);

// The job and the assumptions every number rests on; the notes on network tiers and missing catalog figures.
SizeJob size_job(const SizeRequest& request, const SizeSweep& sweep, const std::vector<SizedPoint>& points);
std::vector<std::string> size_notes(const SizeRequest& request, const SizeSweep& sweep,
                                    const std::vector<SizedPoint>& points);

// Why the curves bend, system by system: where memory forces model parallelism, where the pipeline bubble grows,
// where the network tier changes, where more GPUs stop paying (points priced, in sweep order).
std::vector<std::string> explain_curves(const SizeSweep& sweep, const std::vector<SizedPoint>& points);

// Time to train against GPUs, one line per system, cost (GPU-hours without prices) on a second axis (src/report).
std::string size_chart_svg(const SizeResult& result);

}  // namespace gpuplan::api::detail
