// The search prunes a work item without building its step model when the item's step floor (perf::StepFloor)
// already exceeds the k-th best. That is sound only if no step time of the layout is below the floor: the
// floor must never exceed what estimate_step gives the layout's plainest variant less its data-parallel and
// optimizer terms (the terms another ZeRO stage or offload can shrink).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/step_floor.hpp"
#include "perf/step_model.hpp"

namespace gpuplan {
namespace {

struct Degrees {
  std::int64_t tp, cp, pp, vpp, ep, etp, micro_batch;
};

EstimateInputs job(const std::string& model, int nodes, std::int64_t global_batch, const Degrees& d, bool sp,
                   bool overlap) {
  EstimateInputs in;
  in.memory.model = model_from_catalog(model);
  in.memory.training.seq_len = 4096;
  in.memory.training.micro_batch = d.micro_batch;
  in.memory.training.global_batch = global_batch;
  in.memory.overheads = default_overheads();
  Layout& l = in.memory.layout;
  l.gpus = 8 * nodes;
  l.tp = d.tp;
  l.cp = d.cp;
  l.pp = d.pp;
  l.vpp = d.vpp;
  l.schedule = d.vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
  l.ep = d.ep;
  l.etp = d.etp;
  l.dp = l.gpus / (d.tp * d.cp * d.pp);
  l.sequence_parallel = sp && d.tp > 1;
  in.time.tp_overlap = overlap && l.sequence_parallel;
  const Cluster c = make_cluster("dgx-h100", nodes);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(c);
  return in;
}

// What the search bounds an item with: the plainest variant's step less its data-parallel and optimizer terms.
double plain_bound_s(const EstimateInputs& in) {
  const StepEstimate e = estimate_step(in);
  double bound = e.step_s;
  for (const TimeTerm& term : e.breakdown)
    if (term.name == "dp_comm" || term.name == "optimizer") bound -= term.seconds;
  return bound;
}

double floor_s(const EstimateInputs& in) {
  perf::StepFloor floor(in);
  const PerfConstants perf = perf_constants(in.gpu);
  const std::pair<bool, bool> choice{in.memory.layout.sequence_parallel, in.time.tp_overlap};
  return floor.bound_s(in, perf, perf::step_time_lower_bound_s(in, perf), {&choice, 1});
}

TEST(StepFloor, NeverExceedsTheStepModelsBound) {
  struct Job {
    std::string model;
    int nodes;
    std::int64_t global_batch;
    std::vector<std::int64_t> pps;
  };
  // Dense and MoE, pipelines even and interleaved, groups inside a node and across nodes.
  const std::vector<Job> jobs = {{"mixtral-8x22b", 16, 512, {1, 2, 4, 8}},
                                 {"llama-3.1-405b", 16, 256, {1, 2, 6}},
                                 {"deepseek-v3", 32, 1024, {1}}};
  int compared = 0;
  for (const Job& j : jobs)
    for (std::int64_t tp : {1, 2, 8, 16, 32})
      for (std::int64_t cp : {1, 2, 16})
        for (std::int64_t pp : j.pps)
          for (std::int64_t vpp : {1, 2})
            for (std::int64_t ep : {1, 8, 32})
              for (std::int64_t micro_batch : {1, 4})
                for (const auto& [sp, overlap] : {std::pair{false, false}, {true, false}, {true, true}}) {
                  const Degrees d{tp, cp, pp, vpp, ep, 1, micro_batch};
                  const EstimateInputs in = job(j.model, j.nodes, j.global_batch, d, sp, overlap);
                  double bound = 0;
                  try {
                    bound = plain_bound_s(in);
                  } catch (const InputError&) {
                    continue;   // not a layout of this model and cluster
                  }
                  EXPECT_LE(floor_s(in), bound) << j.model << " tp " << tp << " cp " << cp << " pp " << pp
                                                << " vpp " << vpp << " ep " << ep << " mb " << micro_batch
                                                << " sp " << sp << " overlap " << overlap;
                  ++compared;
                }
  EXPECT_GT(compared, 300);
}

TEST(StepFloor, HoldsTheTensorParallelAllReducesOfAGroupAcrossNodes) {
  // Mixtral 8x22B with TP 16 on 8-GPU nodes and no sequence parallelism: every layer's forward and backward each
  // wait for two all-reduces of the (micro-batch x sequence x hidden) bf16 activation over 16 ranks on two nodes,
  // and nothing overlaps them. 56 layers, 32 microbatches of one sequence (global batch 64 over dp 2).
  const Degrees d{16, 1, 1, 1, 1, 1, 1};
  const EstimateInputs in = job("mixtral-8x22b", 4, 64, d, false, false);
  const double activation_bytes = 4096.0 * 6144 * 2;
  const GroupPlacement tp_group{16, 8, 1};
  const double all_reduce_s = collective_time_s(in.fabric, Collective::allreduce, activation_bytes, tp_group);
  const double waits_s = 32 * 56 * 2 * (2 * all_reduce_s);
  const PerfConstants perf = perf_constants(in.gpu);
  const double flop_floor_s = perf::step_time_lower_bound_s(in, perf);
  EXPECT_GE(floor_s(in), (flop_floor_s + waits_s) * (1 - 1e-6));
  EXPECT_LE(floor_s(in), plain_bound_s(in));
}

}  // namespace
}  // namespace gpuplan
