// Group-limited routing (DeepSeek-V2's device-limited and DeepSeek-V3's node-limited routing, arXiv 2405.04434
// section 2.1.3 and 2412.19437 section 2.1.2; Megatron-Core's group_limited_topk with --moe-router-num-groups and
// --moe-router-group-topk): the experts form `groups` equal blocks of consecutive experts, a token picks `chosen`
// groups by the scores of their best experts, then its top_k experts among the picked groups' experts. With groups
// aligned to nodes, a token reaches at most `chosen` nodes, which is what the dispatcher's inter-node bytes follow.
#include "perf/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpuplan::perf {

double expected_remote_nodes(double experts, double top_k, double nodes) {
  if (nodes <= 1) return 0;
  const double elsewhere = experts - experts / nodes;   // the experts not on one given node
  double none_there = 1;   // the top_k drawn without replacement all among `elsewhere`
  for (double i = 0; i < top_k; ++i) none_there *= std::max(0.0, elsewhere - i) / (experts - i);
  return (nodes - 1) * (1 - none_there);
}

namespace {

double choose(std::int64_t n, std::int64_t k) {
  if (k < 0 || k > n) return 0;
  double ways = 1;
  for (std::int64_t i = 0; i < k; ++i) ways = ways * static_cast<double>(n - i) / static_cast<double>(i + 1);
  return ways;
}

// The chance that a token's experts miss `node` of `nodes`. A group is picked for its best experts, so each picked
// group holds one of the token's experts (when top_k >= chosen; otherwise top_k of the picked groups do): these fall
// anywhere in their group. The other top_k - chosen fall anywhere among the picked groups' remaining experts.
// (Checked against Megatron-Core's selection on independent random scores in tests/moe_routing_test.cpp.) Summed
// over which of the groups that overlap the node are picked: by_count[s][x] holds the picks of s such groups with x
// of the node's experts, weighted by the chance that none of their own experts lands on the node.
double node_missed(const MoeConfig& moe, std::int64_t nodes, std::int64_t node) {
  const std::int64_t groups = moe.router_groups, chosen = moe.router_groups_chosen, top_k = moe.top_k;
  const std::int64_t per_group = moe.routed_experts / groups, per_node = moe.routed_experts / nodes;
  const std::int64_t first = node * per_node, last = first + per_node;   // the node's experts [first, last)
  std::vector<std::int64_t> overlaps;
  for (std::int64_t g = first / per_group; g < groups && g * per_group < last; ++g)
    overlaps.push_back(std::min(last, (g + 1) * per_group) - std::max(first, g * per_group));
  const std::int64_t own = std::min(top_k, chosen);   // picked groups that hold one of the token's experts
  const double holds = static_cast<double>(own) / static_cast<double>(chosen);
  const std::int64_t max_count = std::min<std::int64_t>(chosen, static_cast<std::int64_t>(overlaps.size()));
  std::vector<std::vector<double>> by_count(max_count + 1, std::vector<double>(per_node + 1, 0.0));
  by_count[0][0] = 1;
  for (const std::int64_t overlap : overlaps) {
    const double misses = 1 - holds * static_cast<double>(overlap) / static_cast<double>(per_group);
    for (std::int64_t s = max_count; s >= 1; --s)
      for (std::int64_t x = per_node; x >= overlap; --x) by_count[s][x] += by_count[s - 1][x - overlap] * misses;
  }
  const double picked = static_cast<double>(chosen * per_group);
  const double rest = picked - static_cast<double>(own);   // the picked groups' other experts
  const std::int64_t others = static_cast<std::int64_t>(overlaps.size());
  double missed = 0;
  for (std::int64_t s = 0; s <= max_count; ++s) {
    const double picks = choose(groups - others, chosen - s) / choose(groups, chosen);
    for (std::int64_t x = 0; x <= per_node; ++x) {
      if (by_count[s][x] == 0) continue;
      const double there = static_cast<double>(x) * rest / picked;
      double none_there = 1;
      for (std::int64_t i = 0; i < top_k - own; ++i)
        none_there *= std::max(0.0, rest - there - static_cast<double>(i)) / (rest - static_cast<double>(i));
      missed += by_count[s][x] * picks * none_there;
    }
  }
  return missed;
}

}  // namespace

double expected_remote_nodes(const MoeConfig& moe, double nodes) {
  const double experts = static_cast<double>(moe.routed_experts), top_k = static_cast<double>(moe.top_k);
  const std::int64_t node_count = static_cast<std::int64_t>(std::llround(nodes));
  const bool limited = moe.router_groups > 1 && moe.router_groups_chosen < moe.router_groups;
  // Without groups, or with experts that do not split evenly over the nodes, any top_k experts (an upper bound).
  if (!limited || node_count <= 1 || static_cast<double>(node_count) != nodes || moe.routed_experts % node_count != 0)
    return expected_remote_nodes(experts, top_k, nodes);
  // A token's own node is any of them: the others' chances of being reached, averaged over its node.
  double reached = 0;
  for (std::int64_t node = 0; node < node_count; ++node) reached += 1 - node_missed(moe, node_count, node);
  return reached * (nodes - 1) / nodes;
}

}  // namespace gpuplan::perf
