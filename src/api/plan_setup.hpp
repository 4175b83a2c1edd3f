// The layout search of a plan request, prepared: what `gpuplan plan` runs and `gpuplan size` runs once per system
// and node count.
#pragma once

#include "api/resolve.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/plan.hpp"

namespace gpuplan::api::detail {

struct PlanSetup {
  PlanInputs inputs;
  ResolvedCluster cluster;
};

// The search's inputs from a request, every field checked (InputError naming it).
PlanSetup plan_setup(const PlanRequest& request);

// A plan as `gpuplan estimate --json` prints it, with its layout, the usable memory under the margin and the
// command that reproduces it.
PlanReport plan_report(const PlanRequest& request, const PlanSetup& setup, const Plan& plan);

}  // namespace gpuplan::api::detail
