// gpuplan size's arithmetic: the sweep's node counts, the deadline and prices as the user writes them, what a
// step time makes of a token budget (days, GPU-hours, cost, energy), the network tier a cluster reaches, and the
// time-versus-cost front. Pure functions of their arguments (src/api/run_size.cpp runs the searches).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/hardware.hpp"

namespace gpuplan::sizing {

// What the recommendation minimises.
enum class Objective { time, cost, energy };
Objective objective(std::string_view name, std::string_view field);

// "1:2048": every power of two from MIN to MAX and both ends; "16,24,32": those counts, sorted. InputError naming
// `field` for anything else.
std::vector<std::int64_t> node_counts(std::string_view text, std::string_view field);

// "90d", "12w", "36h", "90" (days): the duration in days.
double duration_days(std::string_view text, std::string_view field);

// Dollars per GPU-hour per system: "2.5" prices every system; "dgx-h100=2.5,dgx-b200=5" each one named (each
// must be among `systems`). Systems without a price are absent.
std::map<std::string, double, std::less<>> prices(std::string_view text, std::string_view field,
                                                  const std::vector<std::string>& systems);

struct TokenBudget {
  double tokens = 0;                  // to train on
  double tokens_per_step = 0;         // the global batch in tokens
  double goodput = 1;                 // fraction of wall time that trains
  double checkpoint_overhead = 0;     // fraction of training time spent on checkpoints
};
struct RunLength {
  double steps = 0;                   // whole steps: the last one is taken in full
  double seconds = 0;                 // wall time, goodput and checkpoints included
  double days = 0;
  double gpu_hours = 0;
};
RunLength run_length(double step_s, std::int64_t gpus, const TokenBudget& budget);

// Megawatt-hours of `seconds` on `gpus` GPUs drawing their board power, plus `overhead` (host and network power
// as a fraction of the GPUs').
double energy_MWh(double seconds, std::int64_t gpus, double board_power_W, double overhead);

// Host and network power as a fraction of the GPUs' board power, from the node's datasheet power; none when the
// catalog states either figure not.
std::optional<double> host_power_overhead(const SystemSpec& system, const GpuSpec& gpu);

// The highest scale-out tier a cluster of `nodes` nodes crosses, and the oversubscription its traffic meets.
struct NetworkTier {
  std::string name;                   // "one node", "leaf", "spine", "core"; "" when the catalog states no tiers
  double oversubscription = 1;
};
NetworkTier network_tier(const SystemSpec& system, std::int64_t nodes, std::optional<double> spine_oversubscription);

// Which of the points (days, cost) no other point beats in both; ties are kept. Points with `fits` false are
// never on the front.
std::vector<bool> pareto_front(const std::vector<double>& days, const std::vector<double>& cost,
                               const std::vector<bool>& fits);

}  // namespace gpuplan::sizing
