// From a step time to a training run: steps, days, GPU-hours and energy.
#include <cmath>

#include "size/sizing.hpp"

namespace gpuplan::sizing {

RunLength run_length(double step_s, std::int64_t gpus, const TokenBudget& budget) {
  RunLength run;
  run.steps = std::ceil(budget.tokens / budget.tokens_per_step);
  // Checkpoints stop training for their share of it; failures and restarts take the rest of the wall time.
  run.seconds = run.steps * step_s * (1 + budget.checkpoint_overhead) / budget.goodput;
  run.days = run.seconds / 86400.0;
  run.gpu_hours = run.seconds / 3600.0 * static_cast<double>(gpus);
  return run;
}

double energy_MWh(double seconds, std::int64_t gpus, double board_power_W, double overhead) {
  const double joules = seconds * static_cast<double>(gpus) * board_power_W * (1 + overhead);
  return joules / 3.6e9;
}

std::optional<double> host_power_overhead(const SystemSpec& system, const GpuSpec& gpu) {
  const double gpus_W = static_cast<double>(system.gpus_per_node) * gpu.board_power_W;
  if (system.power_W <= 0 || gpus_W <= 0 || system.power_W < gpus_W) return std::nullopt;
  return system.power_W / gpus_W - 1;
}

NetworkTier network_tier(const SystemSpec& system, std::int64_t nodes, std::optional<double> spine_oversubscription) {
  if (nodes <= 1) return {"one node", 1};
  if (system.leaf_nodes <= 0) return {"", spine_oversubscription.value_or(1)};
  if (nodes <= system.leaf_nodes) return {"leaf", 1};
  const double above_leaf = spine_oversubscription.value_or(system.spine_oversubscription);
  if (system.spine_nodes <= 0 || nodes <= system.spine_nodes) return {"spine", above_leaf};
  return {"core", above_leaf};
}

std::vector<bool> pareto_front(const std::vector<double>& days, const std::vector<double>& cost,
                               const std::vector<bool>& fits) {
  std::vector<bool> front(days.size(), false);
  for (std::size_t i = 0; i < days.size(); ++i) {
    if (!fits[i]) continue;
    bool beaten = false;
    for (std::size_t j = 0; j < days.size() && !beaten; ++j)
      beaten = fits[j] && days[j] <= days[i] && cost[j] <= cost[i] && (days[j] < days[i] || cost[j] < cost[i]);
    front[i] = !beaten;
  }
  return front;
}

}  // namespace gpuplan::sizing
