// What gpuplan size assumes, said in its output: the batch, goodput, checkpoints, energy, the network's tiers.
#include <fmt/format.h>

#include <algorithm>

#include "api/size_answers.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api::detail {

namespace {

std::string energy_assumption(const SizeRequest& r, const std::vector<SizedPoint>& points) {
  if (r.power_overhead)
    return fmt::format("energy: each GPU at its board power (TDP) for the whole run, plus {:.0f} % for host and "
                       "network (--power-overhead); cooling (PUE) not counted",
                       100 * *r.power_overhead);
  std::string text = "energy: each GPU at its board power (TDP) for the whole run, plus its node's host share "
                     "(datasheet node power minus its GPUs'";
  std::vector<std::string> shares;
  for (const SizedPoint& p : points) {
    const std::string share = p.host_overhead ? fmt::format("{} +{:.0f} %", p.point.system, 100 * *p.host_overhead)
                                              : fmt::format("{}: none stated", p.point.system);
    if (std::find(shares.begin(), shares.end(), share) == shares.end()) shares.push_back(share);
  }
  return fmt::format("{}: {}); switches outside the nodes and cooling (PUE) not counted", text,
                     fmt::join(shares, ", "));
}

}  // namespace

SizeJob size_job(const SizeRequest& r, const SizeSweep& s, const std::vector<SizedPoint>& points) {
  SizeJob job;
  job.model = s.model;
  job.tokens = s.tokens;
  job.seq_len = r.training.seq_len;
  job.global_batch = s.global_batch;
  job.global_batch_tokens = s.global_batch * r.training.seq_len;
  job.objective = r.objective;
  job.goodput = r.goodput;
  job.checkpoint_overhead = r.checkpoint_overhead;
  job.deadline_days = s.deadline_days;
  job.assumptions = {
      fmt::format("global batch {} x {} tokens = {} tokens per step, the same at every cluster size{}",
                  format_quantity(s.global_batch, "sequence", "sequences"), r.training.seq_len, format_count(static_cast<double>(job.global_batch_tokens)),
                  r.training.global_batch ? ""
                                          : " (--global-batch-tokens rounded to a power-of-two count of sequences, "
                                            "so that every power-of-two data-parallel size divides it)"),
      "each point: the fastest layout that fits, from gpuplan plan's exhaustive search over every GPU of the cluster",
      fmt::format("goodput {:g}: {}", r.goodput,
                  r.goodput == 1.0 ? "no time lost to failures and restarts (Llama 3 405B reported more than 90 % "
                                     "effective training time over a 54-day period with 466 interruptions; "
                                     "--goodput 0.9 allows for that)"
                                   : "the fraction of wall time that trains"),
      r.checkpoint_overhead > 0
          ? fmt::format("checkpoints take {:.1f} % of training time", 100 * r.checkpoint_overhead)
          : std::string("checkpoint time not counted (--checkpoint-overhead)"),
      energy_assumption(r, points),
      r.nic_GBps ? fmt::format("scale-out network: {:g} GB/s per GPU per direction (--nic-GBps)", *r.nic_GBps)
                 : std::string("scale-out network: each system's NICs from the catalog"),
  };
  return job;
}

std::vector<std::string> size_notes(const SizeRequest& r, const SizeSweep& s, const std::vector<SizedPoint>&) {
  std::vector<std::string> notes;
  for (const std::string& name : s.systems) {
    const SystemSpec& system = s.catalog->system(name);
    if (system.leaf_nodes <= 0) {
      notes.push_back(fmt::format("{}: the catalog states no network tiers; every node count is priced as one "
                                  "non-blocking fabric",
                                  name));
      continue;
    }
    const double above = r.spine_oversubscription.value_or(system.spine_oversubscription);
    const std::string cost =
        above > 1 ? fmt::format("{:g}:1 oversubscribed, so each GPU's scale-out bandwidth falls to 1/{:g}", above, above)
                  : std::string("non-blocking (1:1), so no bandwidth is lost; the extra switch hops' latency is "
                                "not modelled");
    std::string tiers = fmt::format("{}: up to {} nodes share one leaf switch per rail; beyond, traffic between "
                                    "leaves crosses spine switches",
                                    name, system.leaf_nodes);
    if (system.spine_nodes > 0) tiers += fmt::format(", and beyond {} nodes a core tier", system.spine_nodes);
    notes.push_back(tiers + ": " + cost);
  }
  for (const std::string& name : s.systems)
    if (s.prices.find(name) == s.prices.end() && !s.prices.empty())
      notes.push_back(fmt::format("{}: no price given, so no cost", name));
  return notes;
}

}  // namespace gpuplan::api::detail
