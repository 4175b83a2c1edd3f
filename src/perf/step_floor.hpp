// A floor on the step time of a layout's plainest variant without building its step model: the search prunes
// most of a frontier space with it (a layout whose TP or EP group spans nodes waits on its NICs far longer than
// its GEMMs take, which the FLOP floor alone does not see).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>

#include "comm/group_collective.hpp"
#include "gpuplan/estimate.hpp"
#include "util/array_hash.hpp"

namespace gpuplan::perf {

// What StepModel::time gives the layout in `in` with ZeRO 0, no offload and no recomputation, less its
// data-parallel and optimizer terms (Evaluator::variant_lower_bound_s), is at least bound_s. Per microbatch a
// stage takes at least its share of the FLOP floor and of the attention cores, plus the communication it waits
// for whatever overlaps: the TP collectives where --tp-overlap is off, the EP all-to-alls, the CP ring steps the
// attention does not hide. The slowest stage takes at least the mean, and the bubble adds (pp - 1) / vpp mean
// stage times; then the pipeline sends and the fixed overhead. Each piece is priced as the step model prices it
// (perf/layer_comm.hpp, attention_core). Not for concurrent use: it keeps the groups it set up.
class StepFloor {
 public:
  explicit StepFloor(const EstimateInputs& in);   // the fabric and rank order of every layout it will see
  // The least bound of the layout in `in` (a layout of that fabric with its micro-batch) over `choices` of
  // (sequence parallelism, TP overlap); `flop_floor_s`: step_time_lower_bound_s of the layout.
  double bound_s(const EstimateInputs& in, const PerfConstants& perf, double flop_floor_s,
                 std::span<const std::pair<bool, bool>> choices);
  // One layer's attention core and the context-parallel exchange it waits for, forward and backward, as the step
  // model prices them: the only part of a step the --cp-comm-type of a layout changes.
  double attention_with_cp_s(const EstimateInputs& in, const PerfConstants& perf);

 private:
  // One collective as CommMemo prices it: the wire time and the fixed cost of a call (`call_s`).
  double price(Collective collective, double bytes, const GroupPlacement& group, double call_s);
  // price() with the call cost of `perf`, in the form layer_comm and pipeline_comm_s take.
  auto pricer(const PerfConstants& perf) {
    return [this, call_s = perf.collective_call_s](Collective c, double bytes, const GroupPlacement& g) {
      return price(c, bytes, g, call_s);
    };
  }

  const Fabric* fabric_;
  std::array<ParallelDim, 5> order_;
  using GroupKey = std::array<std::int64_t, 4>;   // collective, ranks, ranks per node, concurrent groups
  std::unordered_map<GroupKey, comm::GroupCollective, detail::ArrayHash> groups_;
};

}  // namespace gpuplan::perf
