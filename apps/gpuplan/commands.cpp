// The subcommands: flags -> request -> library -> print.
#include "commands.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "gpuplan/host.hpp"
#include "options.hpp"

namespace gpuplan::cli {

namespace {

using api::Question;
using Flags = std::shared_ptr<nlohmann::json>;

struct Command {
  const char* name;
  Question question;
  const char* description;
  const char* json_keys;   // what --json prints, for --help
};

constexpr Command kCommands[] = {
    {"model", Question::model, "Architecture, exact parameter counts and FLOPs per token of a model",
     "name, architecture, params, flops"},
    {"memory", Question::memory, "Per-GPU memory of a training job, by component and pipeline stage",
     "per_gpu.*, host.total, host.needed_per_node, host.capacity_per_node, host.fits, nvme.*, capacity, fits, "
     "does_not_fit, stage, suggestions"},
    {"catalog", Question::catalog,
     "List the built-in GPUs, links, systems and models, each with its source (docs/hardware.md)",
     "gpus, links, systems, models"},
    {"topo", Question::topo,
     "Reads `nvidia-smi topo -m` (or rocm-smi --showtopo / amd-smi topology) and prints the link matrix, NVLink "
     "domains, GPU-NIC pairing and placement advice. Without FILE, asks the NVIDIA driver (NVML).",
     "gpus, nics, links, bandwidth_GBps, nvlink_domains, advice, warnings"},
    {"comm", Question::comm,
     "What one collective costs (time, algbw, busbw as nccl-tests prints them, and the algorithm NCCL would pick), "
     "or with --calibrate, a fit of the model to measured nccl-tests outputs.",
     "collective, ranks, fabric, time_s, algbw_GBps, busbw_GBps, algorithm, reason"},
    {"calibrate", Question::calibrate,
     "Fit the step-time model to your measured runs (--runs: CSV tables or Megatron-LM logs) and write a file "
     "--perf reads; or, with --calibrate, the collective model to nccl-tests outputs",
     "runs_fit.constants, runs_fit.runs, runs_fit.mape_*, runs_fit.held_out_mape_*, calibration, files, written"},
    {"estimate", Question::estimate, "Step time, throughput, MFU and memory of a training job on a cluster",
     "time.step_s, time.breakdown, throughput.*, memory as 'gpuplan memory --json', cluster"},
    {"plan", Question::plan, "Search every layout for the fastest one that fits, and explain it",
     "job, plans, space, evaluated, feasible, search_seconds, why_winner, sensitivity, near_misses"},
    {"size", Question::size,
     "How many GPUs of which kind, for how long: the fastest layout of every system and node count for a token "
     "budget, with days, GPU-hours, cost and energy",
     "job, points, headlines, explanation, notes, layouts_evaluated, search_seconds, chart_svg, chart_written"},
};

// File names and file contents are bytes, which JSON text must not be when they are not UTF-8: such bytes print
// as U+FFFD.
std::string json_text(const nlohmann::ordered_json& json) {
  return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// A progress bar on a terminal, for searches that take more than a second.
ProgressCallback progress_bar(const char* counted = "layouts") {
  if (isatty(fileno(stderr)) == 0) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start, counted](std::uint64_t done, std::uint64_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed < 1.0 || total == 0) return;
    const double fraction = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    const auto bar = static_cast<std::size_t>(fraction * 30);
    fmt::print(stderr, "\r[{}{}] {:5.1f}% of {} {}, {:.1f} s{}", std::string(bar, '#'), std::string(30 - bar, '.'),
               100 * fraction, total, counted, elapsed, done >= total ? "\n" : "");
  };
}

// comm --calibrate FILE...: the calibrate question, with the options it shares with comm.
std::string calibrate(const nlohmann::json& flags, bool json) {
  const auto options = api::request_options(Question::calibrate);
  for (const auto& item : flags.items()) {
    const std::string key = item.key();
    if (std::none_of(options.begin(), options.end(), [&](const api::OptionInfo& o) { return o.name == key; }))
      throw InputError("--" + key, "given with --calibrate", "--calibrate FILE... alone, or without --calibrate");
  }
  const api::CalibrateResult r = api::answer(api::from_json<api::CalibrateRequest>(flags));
  return json ? json_text(api::to_json(r)) : api::to_text(r);
}

// What the command prints.
std::string run(const Command& c, const nlohmann::json& flags, bool json, bool explain) {
  switch (c.question) {
    case Question::model: {
      const auto r = api::answer(api::from_json<api::ModelRequest>(flags));
      return json ? json_text(api::to_json(r)) : api::to_text(r);
    }
    case Question::memory: {
      const auto r = api::answer(api::from_json<api::MemoryRequest>(api::with_launch_file(flags)));
      return json ? json_text(api::to_json(r)) : api::to_text(r, explain);
    }
    case Question::estimate: {
      const auto r = api::answer(api::from_json<api::EstimateRequest>(api::with_launch_file(flags)));
      return json ? json_text(api::to_json(r)) : api::to_text(r);
    }
    case Question::plan: {
      const auto r = api::answer(api::from_json<api::PlanRequest>(api::with_launch_file(flags)), progress_bar());
      return json ? json_text(api::to_json(r)) : api::to_text(r);
    }
    case Question::comm: {
      if (flags.contains("calibrate")) return calibrate(flags, json);
      const auto r = api::answer(api::from_json<api::CommRequest>(flags));
      return json ? json_text(api::to_json(r)) : api::to_text(r);
    }
    case Question::topo: {
      const auto r = api::answer(api::from_json<api::TopoRequest>(flags));
      return json ? json_text(api::to_json(r)) : api::to_text(r);
    }
    case Question::catalog: {
      const auto r = api::answer(api::from_json<api::CatalogRequest>(flags));
      return json ? json_text(api::to_json(r)) : api::to_text(r);
    }
    case Question::calibrate: return calibrate(flags, json);
    case Question::size: {
      const auto r = api::answer(api::from_json<api::SizeRequest>(flags), progress_bar("searches"));
      return json ? json_text(api::to_json(r)) : api::to_text(r, flags.value("power", false), flags.value("explain", false));
    }
  }
  return {};
}

void add_command(CLI::App& app, const Command& c, std::string& out) {
  CLI::App* command = app.add_subcommand(c.name, c.description);
  const Flags flags = std::make_shared<nlohmann::json>(nlohmann::json::object());
  add_options(*command, c.question, flags);
  if (c.question == Question::comm) {  // comm --calibrate FILE... [--out FILE] asks the calibrate question
    for (const api::OptionInfo& o : api::request_options(Question::calibrate))
      if (o.name == "calibrate" || o.name == "out") add_option(*command, o, flags);
  }
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, fmt::format("Print JSON (keys: {})", c.json_keys));
  command->callback([&c, flags, json, &out] {
    const bool calibrating = c.question == Question::comm && flags->contains("calibrate");
    try {
      out += run(c, *flags, *json, flags->value("explain", false));
    } catch (const InputError& e) {
      throw with_flags(e, calibrating ? Question::calibrate : c.question);
    }
  });
}

}  // namespace

void add_commands(CLI::App& app, std::string& out) {
  for (const Command& c : kCommands) add_command(app, c, out);
}

}  // namespace gpuplan::cli
