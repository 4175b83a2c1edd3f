#include "perf/step_floor.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "perf/layer_comm.hpp"
#include "perf/step_model.hpp"

namespace gpuplan::perf {

StepFloor::StepFloor(const EstimateInputs& in) : fabric_(&in.fabric), order_(parse_order(in.time.order)) {}

double StepFloor::price(Collective collective, double bytes, const GroupPlacement& group, double call_s) {
  if (!(bytes > 0) || group.ranks <= 1) return 0;   // as CommMemo: nothing to move costs nothing
  const GroupKey key{static_cast<std::int64_t>(collective), group.ranks, group.ranks_per_node,
                     group.concurrent_groups_per_node};
  auto it = groups_.find(key);
  if (it == groups_.end()) it = groups_.emplace(key, comm::GroupCollective(*fabric_, collective, group)).first;
  return it->second.time_s(bytes) + call_s;
}

double StepFloor::bound_s(const EstimateInputs& in, const PerfConstants& perf, double flop_floor_s,
                          std::span<const std::pair<bool, bool>> choices) {
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  Layout l = in.memory.layout;
  const RankPlacement placement = place_ranks(l, std::max(1, fabric_->gpus_per_node), order_);
  const Machine mc{peak_tflops(tr, in.gpu) * 1e12, in.gpu.memory_GBps * 1e9, &perf,
                   peak16_flops(tr, in.gpu)};
  const Cost core = attention_core(mc, m, microbatch_shape(in, l));
  const auto priced = pricer(perf);

  const double stages = static_cast<double>(std::max<std::int64_t>(1, l.pp));
  const double virtual_stages = l.schedule == PpSchedule::interleaved ? static_cast<double>(l.vpp) : 1.0;
  const double microbatches = static_cast<double>(tr.global_batch / (tr.micro_batch * l.dp));
  const double layers = static_cast<double>(m.layers) / stages;
  const double moe_layers = static_cast<double>(m.moe_layers_in(0, m.layers)) / stages;
  double best = std::numeric_limits<double>::infinity();
  // TP overlap changes how the collectives show, not what they cost: each sequence-parallel choice is priced once.
  std::optional<bool> priced_for;
  LayerComm comm;
  double pipeline_s = 0;
  for (const auto& [sequence_parallel, tp_overlap] : choices) {
    if (priced_for != sequence_parallel) {
      l.sequence_parallel = sequence_parallel;
      const MicrobatchShape shape = microbatch_shape(in, l);
      comm = layer_comm(m, l, shape, placement, priced);
      const double transfer_s = pipeline_transfer_s(shape, stages, placement, priced);
      // Overlapped, only the fill's and the drain's transfers are sure to show.
      pipeline_s = pipeline_overlaps(l, in.time)
                       ? 2 * pipeline_fill_transfers(stages, virtual_stages) * transfer_s
                       : pipeline_comm_s(transfer_s, stages, microbatches, virtual_stages);
      priced_for = sequence_parallel;
    }
    const CpExposed cp = cp_exposed(comm, core);
    // The TP collectives hide behind the GEMMs only with overlap; without, forward and backward each wait (a MoE
    // layer's its own, layer_comm.hpp).
    const bool waits = !(tp_overlap && l.tp > 1);
    const double tp_waits = waits ? comm.tp_forward_s + comm.tp_backward_s + comm.tp_backward_async_s : 0.0;
    const double moe_tp_waits =
        waits ? comm.tp_moe_forward_s + comm.tp_moe_backward_s + comm.tp_moe_backward_async_s : 0.0;
    const double mean_stage_s = flop_floor_s / microbatches +
                                layers * (core.forward_s + core.backward_s + cp.forward_s + cp.backward_s) +
                                (layers - moe_layers) * tp_waits + moe_layers * moe_tp_waits +
                                2 * moe_layers * comm.ep_per_layer_s;
    const double step_s =
        (microbatches + (stages - 1) / virtual_stages) * mean_stage_s + pipeline_s + perf.step_overhead_s;
    best = std::min(best, step_s);
  }
  return best * (1.0 - 1e-9);   // rounding of the sums never lifts it above the step model's
}

double StepFloor::attention_with_cp_s(const EstimateInputs& in, const PerfConstants& perf) {
  const Layout& l = in.memory.layout;
  const RankPlacement placement = place_ranks(l, std::max(1, fabric_->gpus_per_node), order_);
  const Machine mc{peak_tflops(in.memory.training, in.gpu) * 1e12, in.gpu.memory_GBps * 1e9, &perf,
                   peak16_flops(in.memory.training, in.gpu)};
  const MicrobatchShape shape = microbatch_shape(in, l);
  const Cost core = attention_core(mc, *in.memory.model, shape);
  const auto priced = pricer(perf);
  const CpExposed cp = cp_exposed(layer_comm(*in.memory.model, l, shape, placement, priced), core);
  return core.forward_s + core.backward_s + cp.forward_s + cp.backward_s;
}

}  // namespace gpuplan::perf
