// The search's evaluator: the job's models prepared once, the objective, and the layouts a shape and variant make.
#include "search/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/error.hpp"

namespace gpuplan::search {

namespace {

// The search's inputs, checked before anything is prepared from them.
const PlanInputs& checked(const PlanInputs& in) {
  if (!in.base.model) throw InputError("model", "(none)", "a model (the search needs its layers and heads)");
  if (!(in.base.memory_margin >= 0 && in.base.memory_margin < 1))
    throw InputError("ranking.memory_margin", std::to_string(in.base.memory_margin), "a fraction in [0, 1)");
  return in;
}

// What `gpuplan estimate` builds for the same job, with the compute constants resolved once.
EstimateInputs estimate_inputs_of(const PlanInputs& in) {
  EstimateInputs est;
  est.memory = in.base;
  est.gpu = in.gpu;
  est.fabric = in.fabric;
  est.perf = in.perf ? *in.perf : perf_constants(in.gpu);
  return est;
}

}  // namespace

Evaluator::Evaluator(const PlanInputs& inputs)
    : in_(checked(inputs)), est_(estimate_inputs_of(in_)), step_job_(est_), memory_job_(in_.base) {
  gpus_ = in_.gpus > 0 ? in_.gpus : static_cast<std::int64_t>(in_.fabric.nodes) * in_.fabric.gpus_per_node;
  if (gpus_ < 1) throw InputError("gpus", std::to_string(gpus_), "a positive GPU count");
  usable_ = usable_memory(in_.base.capacity_bytes, in_.base.memory_margin);
  tokens_step_ = static_cast<double>(in_.base.training.global_batch) * static_cast<double>(in_.base.training.seq_len);
  if (!(in_.gpu.memory_GBps > 0)) throw InputError("gpu", in_.gpu.name, "a GPU with a memory bandwidth in the catalog");
  if (!(perf::peak_tflops(in_.base.training, in_.gpu) > 0))
    throw InputError("cluster.system", in_.gpu.name,
                     fmt::format("a GPU with a dense {} peak in the catalog", perf::peak_dtype(in_.base.training, in_.gpu)));
}

memory::MemoryModel Evaluator::memory_model(const Shape& s) const {
  return memory::MemoryModel(memory_job_, shape_layout(s));
}

bool Evaluator::host_fits(const memory::MemoryPeak& m) const {
  // The same checks as estimate_memory's: the worst stage's per-GPU bytes on every GPU of a node.
  const NodeStorage& node = in_.base.node;
  return check_node_storage(m.host_bytes, node, gpus_, node.host_memory_bytes).fits &&
         check_node_storage(m.nvme_bytes, node, gpus_, node.nvme_bytes).fits;
}

double Evaluator::fill_fraction(const memory::MemoryPeak& m) const {
  const NodeStorage& node = in_.base.node;
  double fraction = usable_ > 0 ? static_cast<double>(m.total) / static_cast<double>(usable_) : 0;
  for (const StorageCheck& c : {check_node_storage(m.host_bytes, node, gpus_, node.host_memory_bytes),
                                check_node_storage(m.nvme_bytes, node, gpus_, node.nvme_bytes)})
    if (c.checked && c.capacity_per_node_bytes > 0)
      fraction = std::max(fraction, static_cast<double>(c.needed_per_node_bytes) /
                                        static_cast<double>(c.capacity_per_node_bytes));
  return fraction;
}

void Evaluator::set_layout(EstimateInputs& est, const Shape& s, const Variant& v) const {
  est.memory.layout = layout_of(s, v);
  est.memory.training.micro_batch = v.micro_batch;
  est.time.tp_overlap = v.tp_overlap && s.tp > 1;
}

double Evaluator::step_lower_bound_s(const EstimateInputs& est) const {
  return perf::step_time_lower_bound_s(est, step_job_.perf);
}

double Evaluator::variant_lower_bound_s(const perf::StepModel& model) {
  // With ZeRO 0 and no offload the per-microbatch stage times hold no ZeRO-3 gathers or parameter streaming, so
  // every stage time (and with it the bubble) is at most that of any other ZeRO stage, offload or recomputation
  // of the same shape; the pipeline transfers, embedding synchronization and fixed overhead are the same for
  // all. The data-parallel and optimizer terms are the ones that another choice can make smaller.
  Layout plain = model.layout();
  plain.zero = 0;
  plain.offload = Offload::none;
  plain.recompute = Recompute::none;
  plain.recompute_layers = -1;
  const StepEstimate e = model.time(plain);
  double bound = e.step_s;
  for (const auto& [name, t] : e.breakdown)
    if (name == "dp_comm" || name == "optimizer") bound -= t;
  return bound * (1.0 - 1e-9);   // rounding of the sums never lifts it above a step time
}

double Evaluator::cost_per_mtokens(const Shape& s, double step_s) const {
  if (!(in_.price_per_gpu_hour > 0)) return 0;
  return in_.price_per_gpu_hour * static_cast<double>(s.gpus) * step_s / 3600.0 / tokens_step_ * 1e6;
}

double Evaluator::score(const Shape& s, double step_s) const {
  switch (in_.objective) {
    case Objective::step_time: return step_s;
    case Objective::tokens_per_s: return step_s / tokens_step_;                 // seconds per token
    case Objective::cost: return static_cast<double>(s.gpus) * step_s / tokens_step_;   // GPU-seconds per token
  }
  return step_s;
}

Layout Evaluator::shape_layout(const Shape& s) const {
  Layout l = in_.base.layout;
  l.gpus = s.gpus;
  l.tp = s.tp;
  l.cp = s.cp;
  l.cp_comm = s.cp_comm;
  l.cp_a2a = s.cp_a2a;
  l.pp = s.pp;
  l.vpp = s.vpp;
  l.ep = s.ep;
  l.etp = s.etp;
  l.dp = s.dp;
  l.schedule = s.vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
  l.first_stage_layers = s.first_stage_layers;
  l.last_stage_layers = s.last_stage_layers;
  return l;
}

Layout Evaluator::layout_of(const Shape& s, const Variant& v) const {
  Layout l = shape_layout(s);
  l.sequence_parallel = v.sequence_parallel && s.tp > 1;
  l.zero = v.zero;
  l.recompute = v.recompute;
  l.recompute_layers = v.recompute == Recompute::full ? v.recompute_layers : -1;
  l.offload = v.offload;
  l.offload_target = v.offload == Offload::none ? OffloadTarget::cpu : v.offload_target;
  return l;
}

}  // namespace gpuplan::search
