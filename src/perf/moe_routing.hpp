#pragma once
// Where a token's routed experts are: the nodes the flex dispatcher (DeepEP, HybridEP) sends it to.
#include "gpuplan/model.hpp"

namespace gpuplan::perf {

// The other nodes one token's routed experts are on, in expectation: its top_k experts are distinct and, with
// balanced routing, any top_k of the `experts`, spread evenly over `nodes`; one node holds none of them with
// probability C(experts - experts / nodes, top_k) / C(experts, top_k).
double expected_remote_nodes(double experts, double top_k, double nodes);

// The same under the model's group-limited routing (MoeConfig::router_groups), where a token's experts lie in the
// groups it picked (moe_routing.cpp).
double expected_remote_nodes(const MoeConfig& moe, double nodes);

}  // namespace gpuplan::perf
