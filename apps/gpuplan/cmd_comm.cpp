// gpuplan comm <collective> --size BYTES|MIN:MAX --ranks N (--system NAME [--nodes K] | --topology FILE) ...
// gpuplan comm [collective] --calibrate FILE... [--out FILE] [--system NAME]
// What one collective costs on a fabric, printed as nccl-tests prints it; and the fit of the model to measured
// nccl-tests outputs. See docs/comm.md.
#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/topology.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::cli {

namespace {

using nlohmann::ordered_json;

struct CommArgs {
  std::string collective;
  std::string size;
  std::int64_t ranks = 0;
  std::int64_t ranks_per_node = 0;
  std::int64_t concurrent_groups = 1;
  std::string system;
  int nodes = 0;
  std::string topology_file;
  double nic_GBps = 0;
  std::string gpu;
  std::vector<std::string> catalog_files;
  std::string comm_calibration;
  std::vector<std::string> calibrate_files;
  std::string out;
  bool json = false;
};

constexpr const char* kCollectives = "allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv";

Collective parse_collective(const std::string& text) {
  if (auto c = collective_from_string(text)) return *c;
  throw InputError("COLLECTIVE", "'" + text + "'", kCollectives);
}

// "1GiB" or "1MiB:8GiB" (powers of two from MIN up to MAX).
std::vector<double> parse_sizes(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {static_cast<double>(parse_bytes(text, "--size"))};
  const bytes_t lo = parse_bytes(text.substr(0, colon), "--size");
  const bytes_t hi = parse_bytes(text.substr(colon + 1), "--size");
  if (lo < 1 || hi < lo)
    throw InputError("--size", "'" + text + "'", "MIN:MAX with 1 <= MIN <= MAX, e.g. 1MiB:8GiB");
  std::vector<double> out;
  for (double s = static_cast<double>(lo); s <= static_cast<double>(hi) * (1 + 1e-12); s *= 2) out.push_back(s);
  if (out.size() > 64) throw InputError("--size", "'" + text + "'", "a sweep of at most 64 sizes");
  return out;
}

struct Target {
  Fabric fabric;
  std::string description;
};

Target make_target(const CommArgs& a, const HardwareCatalog& catalog, std::int64_t ranks) {
  Target t;
  if (!a.system.empty() && !a.topology_file.empty())
    throw InputError("--topology", "given together with --system", "one of --system NAME or --topology FILE");
  if (a.nodes < 0) throw InputError("--nodes", std::to_string(a.nodes), "a whole number >= 1");
  if (!a.system.empty()) {
    const SystemSpec* sys = catalog.find_system(a.system);
    int nodes = a.nodes;
    if (nodes == 0) {
      // Enough nodes for the ranks at the chosen ranks per node.
      const std::int64_t gpn = sys != nullptr ? std::max(sys->gpus_per_node, 1) : 1;
      const std::int64_t rpn = a.ranks_per_node > 0 ? std::min(a.ranks_per_node, gpn) : gpn;
      nodes = static_cast<int>(std::max<std::int64_t>(1, (ranks + rpn - 1) / rpn));
    }
    Cluster c = make_cluster(catalog, a.system, nodes);
    if (!a.gpu.empty()) c.gpu = catalog.gpu(a.gpu);
    t.fabric = fabric_from_cluster(c, &catalog);
    t.description = c.name;
  } else if (!a.topology_file.empty()) {
    const Topology topo = parse_topology(read_text_file(a.topology_file, "--topology"));
    const GpuSpec* gpu = a.gpu.empty() ? nullptr : &catalog.gpu(a.gpu);
    if (a.nic_GBps < 0) throw InputError("--nic-GBps", fmt::format("{}", a.nic_GBps), "a bandwidth in GB/s >= 0");
    t.fabric = fabric_from_topology(topo, gpu, a.nic_GBps);
    t.fabric.nodes = a.nodes > 0 ? a.nodes : 1;
    if (t.fabric.nodes > 1 && !(t.fabric.nic_per_gpu_GBps > 0))
      throw InputError("--nodes", std::to_string(t.fabric.nodes),
                       "1, or give the NIC bandwidth per GPU with --nic-GBps (the topology shows no NICs)");
    t.description = fmt::format("{}x {}", t.fabric.nodes, t.fabric.name);
  } else {
    throw InputError("--system/--topology", "neither given", "--system NAME [--nodes K] or --topology FILE");
  }
  if (!a.comm_calibration.empty())
    apply_comm_overrides(t.fabric, read_text_file(a.comm_calibration, "--comm-calibration"), a.comm_calibration);
  return t;
}

ordered_json cost_json(double size, const CollectiveCost& c) {
  ordered_json j;
  j["size_bytes"] = size;
  j["time_s"] = c.time_s;
  j["algbw_GBps"] = c.algbw_GBps;
  j["busbw_GBps"] = c.busbw_GBps;
  j["algorithm"] = c.algorithm;
  j["protocol"] = c.protocol;
  j["reason"] = c.reason;
  return j;
}

void run_cost(const CommArgs& a, const HardwareCatalog& catalog) {
  if (a.collective.empty())
    throw InputError("COLLECTIVE", "(missing)", std::string(kCollectives) + ", or --calibrate FILE...");
  const Collective coll = parse_collective(a.collective);
  if (a.size.empty()) throw InputError("--size", "(missing)", "a size such as 1GiB or a sweep such as 1MiB:8GiB");
  if (a.ranks < 1) throw InputError("--ranks", a.ranks == 0 ? "(missing)" : std::to_string(a.ranks), "a whole number >= 1");
  if (a.ranks_per_node < 0) throw InputError("--ranks-per-node", std::to_string(a.ranks_per_node), "a whole number >= 1");
  if (a.concurrent_groups < 1)
    throw InputError("--concurrent-groups", std::to_string(a.concurrent_groups), "a whole number >= 1");
  const std::vector<double> sizes = parse_sizes(a.size);
  const Target t = make_target(a, catalog, a.ranks);
  const Fabric& f = t.fabric;
  const std::int64_t gpn = std::max(f.gpus_per_node, 1);
  if (a.ranks_per_node > gpn)
    throw InputError("--ranks-per-node", std::to_string(a.ranks_per_node),
                     fmt::format("at most {} ({} GPUs per node)", gpn, gpn));
  GroupPlacement g;
  g.ranks = a.ranks;
  g.ranks_per_node = a.ranks_per_node > 0 ? a.ranks_per_node : std::min(a.ranks, gpn);
  g.concurrent_groups_per_node = a.concurrent_groups;
  const std::int64_t capacity = static_cast<std::int64_t>(f.nodes) * g.ranks_per_node;
  if (a.ranks > capacity)
    throw InputError("--ranks", std::to_string(a.ranks),
                     fmt::format("at most {} on {} ({} node{} x {} ranks per node)", capacity, t.description, f.nodes,
                                 f.nodes == 1 ? "" : "s", g.ranks_per_node));
  const std::int64_t rpn = std::min(g.ranks, g.ranks_per_node);
  const std::int64_t spanned = (g.ranks + rpn - 1) / rpn;

  std::vector<CollectiveCost> costs;
  for (double s : sizes) costs.push_back(collective_cost(f, coll, s, g));

  if (a.json) {
    ordered_json j;
    j["collective"] = to_string(coll);
    j["ranks"] = g.ranks;
    j["ranks_per_node"] = rpn;
    j["nodes_spanned"] = spanned;
    j["concurrent_groups_per_node"] = g.concurrent_groups_per_node;
    j["fabric"] = t.description;
    j["busbw_factor"] = busbw_factor(coll, g.ranks);
    if (sizes.size() == 1) {
      j.update(cost_json(sizes[0], costs[0]));
    } else {
      ordered_json arr = ordered_json::array();
      for (std::size_t i = 0; i < sizes.size(); ++i) arr.push_back(cost_json(sizes[i], costs[i]));
      j["results"] = arr;
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("# {} over {} ranks on {}: {} rank{} per node, {} node{}{}\n", to_string(coll), g.ranks, t.description,
             rpn, rpn == 1 ? "" : "s", spanned, spanned == 1 ? "" : "s",
             g.concurrent_groups_per_node > 1
                 ? fmt::format(", {} groups sharing each node's NICs", g.concurrent_groups_per_node)
                 : "");
  fmt::print("# busbw = algbw x {:.4f} (nccl-tests factor for {} ranks); model, not a measurement\n",
             busbw_factor(coll, g.ranks), g.ranks);
  fmt::print("#{:>14} {:>12} {:>12} {:>12}  {}\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
             "algorithm");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto& c = costs[i];
    fmt::print(" {:>14.0f} {:>12.2f} {:>12.2f} {:>12.2f}  {}{}\n", sizes[i], c.time_s * 1e6, c.algbw_GBps,
               c.busbw_GBps, c.algorithm, c.protocol.empty() ? "" : "/" + c.protocol);
  }
  if (sizes.size() == 1) {
    fmt::print("why: {}\n", costs[0].reason);
  } else {
    fmt::print("# why (largest size): {}\n", costs.back().reason);
  }
}

void run_calibrate(const CommArgs& a, const HardwareCatalog& catalog) {
  std::optional<Collective> hint;
  if (!a.collective.empty()) hint = parse_collective(a.collective);
  int gpn = 0;
  std::optional<Target> target;
  if (!a.system.empty() || !a.topology_file.empty()) {
    CommArgs b = a;
    b.comm_calibration.clear();
    target = make_target(b, catalog, 1);
    gpn = target->fabric.gpus_per_node;
  }
  std::vector<NcclTestsLog> logs;
  for (const auto& file : a.calibrate_files)
    logs.push_back(parse_nccl_tests(read_text_file(file, "--calibrate"), file, hint,
                                    a.ranks > 0 ? static_cast<int>(a.ranks) : 0));
  const CommCalibration cal = calibrate_comm(logs, gpn);
  const std::string doc = comm_calibration_json(cal);
  if (!a.out.empty()) {
    std::ofstream out(a.out, std::ios::binary);
    if (!out) throw InputError("--out", "'" + a.out + "' (cannot be written)", "a writable file path");
    out << doc;
    if (!out) throw InputError("--out", "'" + a.out + "' (write failed)", "a writable file path");
  }

  // Model against the measurements, before and after calibration, when the fabric is known.
  struct Row {
    std::string file;
    int ranks;
    double mean_before = 0, max_before = 0, mean_after = 0, max_after = 0;
    std::size_t n = 0;
  };
  std::vector<Row> comparison;
  if (target) {
    Fabric calibrated = target->fabric;
    apply_comm_overrides(calibrated, doc, a.out.empty() ? "calibration" : a.out);
    for (const auto& l : logs) {
      Row r{l.origin, l.ranks};
      GroupPlacement g;
      g.ranks = l.ranks;
      g.ranks_per_node = std::min<std::int64_t>(l.ranks, gpn);
      if (static_cast<std::int64_t>(target->fabric.nodes) * g.ranks_per_node < l.ranks) continue;
      for (const auto& row : l.rows) {
        const double before = collective_time_s(target->fabric, l.collective, row.size_bytes, g) * 1e6;
        const double after = collective_time_s(calibrated, l.collective, row.size_bytes, g) * 1e6;
        const double eb = std::fabs(before - row.time_us) / row.time_us;
        const double ea = std::fabs(after - row.time_us) / row.time_us;
        r.mean_before += eb;
        r.mean_after += ea;
        r.max_before = std::max(r.max_before, eb);
        r.max_after = std::max(r.max_after, ea);
        ++r.n;
      }
      if (r.n > 0) {
        r.mean_before /= static_cast<double>(r.n);
        r.mean_after /= static_cast<double>(r.n);
        comparison.push_back(r);
      }
    }
  }

  if (a.json) {
    ordered_json j;
    j["calibration"] = ordered_json::parse(doc);
    ordered_json files = ordered_json::array();
    for (const auto& l : logs) {
      ordered_json x;
      x["file"] = l.origin;
      x["collective"] = to_string(l.collective);
      x["ranks"] = l.ranks;
      x["hosts"] = l.hosts;
      x["rows"] = l.rows.size();
      x["warnings"] = l.warnings;
      files.push_back(x);
    }
    j["files"] = files;
    if (!comparison.empty()) {
      ordered_json cmp = ordered_json::array();
      for (const auto& r : comparison)
        cmp.push_back({{"file", r.file}, {"ranks", r.ranks}, {"rows", r.n},
                       {"model_mean_rel_error", r.mean_before}, {"model_max_rel_error", r.max_before},
                       {"calibrated_mean_rel_error", r.mean_after}, {"calibrated_max_rel_error", r.max_after}});
      j["comparison"] = cmp;
    }
    if (!a.out.empty()) j["written"] = a.out;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  for (const auto& l : logs) {
    fmt::print("{}: {} on {} ranks{}, {} rows\n", l.origin, to_string(l.collective), l.ranks,
               l.hosts > 0 ? fmt::format(" ({} host{})", l.hosts, l.hosts == 1 ? "" : "s") : "", l.rows.size());
    for (const auto& w : l.warnings) fmt::print("  warning: {}\n", w);
  }
  auto tier = [](const char* name, const TierFit& t) {
    if (!t.fitted) return;
    fmt::print("{} tier: latency {:.2f} us + {:.3f} us per ring step, busbw {:.2f} GB/s  ({} rows from {} file{}; "
               "fit error mean {:.1f}%, max {:.1f}%)\n",
               name, t.calibration.latency_us, t.calibration.step_latency_us, t.calibration.bus_GBps, t.points,
               t.files, t.files == 1 ? "" : "s", 100 * t.mean_rel_error, 100 * t.max_rel_error);
  };
  tier("intra-node", cal.intra);
  tier("inter-node", cal.inter);
  if (!comparison.empty()) {
    fmt::print("\nmodel vs measured time on {} (relative error, mean / max over the rows):\n", target->description);
    fmt::print("  {:<40} {:>5} {:>18} {:>18}\n", "file", "ranks", "uncalibrated", "calibrated");
    for (const auto& r : comparison)
      fmt::print("  {:<40} {:>5} {:>8.1f}% /{:>6.1f}% {:>8.1f}% /{:>6.1f}%\n", r.file.substr(r.file.size() > 40 ? r.file.size() - 40 : 0),
                 r.ranks, 100 * r.mean_before, 100 * r.max_before, 100 * r.mean_after, 100 * r.max_after);
  }
  if (!a.out.empty()) fmt::print("\nwrote {}: use it with --comm-calibration {}\n", a.out, a.out);
  else fmt::print("\n{}", doc);
}

}  // namespace

void add_comm_command(CLI::App& app) {
  auto args = std::make_shared<CommArgs>();
  CLI::App* cmd = app.add_subcommand(
      "comm",
      "What one collective costs (time, algbw, busbw as nccl-tests prints them, and the algorithm NCCL would "
      "pick), or with --calibrate, a fit of the model to measured nccl-tests outputs.");
  cmd->add_option("collective", args->collective, kCollectives)->type_name("COLLECTIVE");
  cmd->add_option("--size", args->size,
                  "bytes as nccl-tests counts them (per-rank buffer for allreduce/broadcast/sendrecv, whole buffer "
                  "for allgather/reducescatter/alltoall): 1GiB, 256MB, 1e9; or a sweep MIN:MAX in powers of two")
      ->type_name("BYTES");
  cmd->add_option("--ranks", args->ranks, "ranks in the collective");
  cmd->add_option("--ranks-per-node", args->ranks_per_node,
                  "ranks of the group on each node (default: packed, min(ranks, GPUs per node)); fewer spreads the "
                  "group across nodes, as data-parallel groups are");
  cmd->add_option("--concurrent-groups", args->concurrent_groups,
                  "groups that run at once on each node and share its NICs (default 1)");
  cmd->add_option("--system", args->system, "system from 'gpuplan catalog systems' (dgx-h100, dgx-a100, ...)");
  cmd->add_option("--nodes", args->nodes, "nodes of the system (default: as many as the ranks need)");
  cmd->add_option("--topology", args->topology_file, "`nvidia-smi topo -m` (or rocm-smi/amd-smi) output of one node")
      ->type_name("FILE");
  cmd->add_option("--nic-GBps", args->nic_GBps, "with --topology: scale-out bandwidth per GPU, GB/s per direction");
  cmd->add_option("--gpu", args->gpu, "GPU catalog name (overrides the system's, or names the topology's GPUs)");
  cmd->add_option("--catalog", args->catalog_files, "hardware catalog JSON adding or overriding entries (repeatable)")
      ->type_name("FILE");
  cmd->add_option("--comm-calibration", args->comm_calibration,
                  "JSON with a \"comm\" section (written by --calibrate --out): calibrated tiers and constants")
      ->type_name("FILE");
  cmd->add_option("--calibrate", args->calibrate_files,
                  "nccl-tests outputs to fit (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf; "
                  "vTrain CSV tables)")
      ->type_name("FILE...");
  cmd->add_option("--out", args->out, "with --calibrate: write the calibration JSON here")->type_name("FILE");
  cmd->add_flag("--json", args->json, "print JSON instead of text");
  cmd->callback([args]() {
    HardwareCatalog catalog = HardwareCatalog::builtin();
    for (const auto& f : args->catalog_files) catalog.merge_json(read_text_file(f, "--catalog"), f);
    if (!args->calibrate_files.empty()) {
      if (!args->size.empty())
        throw InputError("--size", "given with --calibrate", "--calibrate FILE... alone, or --size without --calibrate");
      run_calibrate(*args, catalog);
    } else {
      if (!args->out.empty()) throw InputError("--out", "given without --calibrate", "--out only with --calibrate");
      run_cost(*args, catalog);
    }
  });
}

}  // namespace gpuplan::cli
