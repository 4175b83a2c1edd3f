// gpuplan estimate: step time, throughput, MFU/HFU and memory of a training job on a cluster.
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cluster_options.hpp"
#include "commands.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/report.hpp"
#include "gpuplan/host.hpp"
#include "memory_options.hpp"

namespace gpuplan::cli {

namespace {

std::string text_report(const EstimateInputs& in, const StepEstimate& e, const std::string& origin) {
  std::string out;
  out += fmt::format("Step time on {} ({} GPUs, {}; peak {:.0f} TFLOP/s {})\n", origin, e.memory.gpus, in.gpu.name,
                     e.peak_tflops, to_string(in.memory.training.precision));
  out += fmt::format("  {:<18} {:>12} {:>8}\n", "component", "seconds", "share");
  for (const auto& [name, t] : e.breakdown) {
    if (t <= 0) continue;
    out += fmt::format("  {:<18} {:>12.6f} {:>7.1f}%\n", name, t, 100 * t / e.step_s);
  }
  out += fmt::format("  {:<18} {:>12.6f} {:>7.1f}%\n", "step", e.step_s, 100.0);
  out += fmt::format("\nThroughput: {:.0f} tokens/s ({:.0f} per GPU), {} microbatches of {} per pipeline\n",
                     e.tokens_per_s, e.tokens_per_s_per_gpu, e.memory.microbatches, in.memory.training.micro_batch);
  out += fmt::format("Model TFLOP/s per GPU: {:.1f}  MFU {:.1f}%  HFU {:.1f}% ({:.1f} TFLOP/s with recompute)\n",
                     e.model_tflops_per_gpu, 100 * e.mfu, 100 * e.hfu, e.hardware_tflops_per_gpu);
  out += fmt::format("Memory: {} per GPU of {} ({})\n", format_bytes(static_cast<double>(e.memory.worst().total)),
                     format_bytes(static_cast<double>(e.memory.capacity_bytes)), e.memory.fits ? "fits" : "DOES NOT FIT");
  return out;
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  struct Args {
    MemoryOptions memory;
    ClusterOptions cluster;
    bool tp_overlap = false;
    bool no_dp_overlap = false;
    std::string order = "tp-cp-ep-dp-pp";
    std::vector<std::string> perf_files;
    std::string comm_calibration;
    bool json = false;
    bool all_stages = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("estimate", "Step time, throughput, MFU and memory of a training job on a cluster");
  args->memory.add_to(*cmd);
  args->cluster.add_to(*cmd);
  const char* timing = "Step time";
  cmd->add_flag("--tp-overlap", args->tp_overlap, "Tensor-parallel communication overlapped with GEMMs")->group(timing);
  cmd->add_flag("--no-dp-overlap", args->no_dp_overlap,
                "Gradient reduction after the backward pass (no bucketed overlap)")->group(timing);
  cmd->add_option("--order", args->order, "Rank placement, innermost first (Megatron-LM default)")
      ->capture_default_str()->group(timing);
  cmd->add_option("--perf", args->perf_files, "Compute-model constants overriding data/perf.json (repeatable)")
      ->type_name("FILE")->group(timing);
  cmd->add_option("--comm-calibration", args->comm_calibration,
                  "Collective latency/bandwidth fitted to nccl-tests logs ('gpuplan comm --calibrate ... --out FILE')")
      ->type_name("FILE")->group(timing);
  cmd->add_flag("--json", args->json,
                "Print JSON (keys: time.step_s, time.breakdown, throughput.*, memory as 'gpuplan memory --json')");
  cmd->add_flag("--all-stages", args->all_stages, "Report the memory of every pipeline stage");
  cmd->callback([args] {
    parse_order(args->order);  // a bad placement is reported before anything else
    EstimateInputs in;
    in.memory = args->memory.resolve();
    HardwareCatalog catalog = HardwareCatalog::builtin();
    for (const auto& f : args->memory.catalog_files) catalog.merge_json(read_text_file(f, "--catalog"), f);
    const Layout layout = resolve_layout(in.memory);
    const ResolvedCluster cluster = args->cluster.resolve(catalog, args->memory.gpu, layout.gpus);
    if (args->memory.gpu.empty() && args->memory.gpu_memory.empty())
      in.memory.capacity_bytes = cluster.gpu.usable_memory_bytes;
    in.gpu = cluster.gpu;
    in.fabric = cluster.fabric;
    if (!args->comm_calibration.empty())
      apply_comm_overrides(in.fabric, read_text_file(args->comm_calibration, "--comm-calibration"),
                           args->comm_calibration);
    in.time.tp_overlap = args->tp_overlap;
    in.time.dp_overlap = !args->no_dp_overlap;
    in.time.order = args->order;
    std::vector<std::pair<std::string, std::string>> overlays;
    for (const auto& f : args->perf_files) overlays.emplace_back(f, read_text_file(f, "--perf"));
    in.perf = perf_constants(in.gpu, overlays);
    const StepEstimate e = estimate_step(in);
    if (args->json) {
      nlohmann::json j = estimate_json(in, e, args->all_stages);
      j["cluster"] = {{"origin", cluster.origin},
                      {"gpu", in.gpu.name},
                      {"nodes", in.fabric.nodes},
                      {"gpus_per_node", in.fabric.gpus_per_node},
                      {"order", in.time.order},
                      {"perf_constants", in.perf->source},
                      {"comm_calibration", in.fabric.calibration_sources}};
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("{}", text_report(in, e, cluster.origin));
    }
  });
}

}  // namespace gpuplan::cli
