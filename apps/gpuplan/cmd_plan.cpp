// gpuplan plan: the fastest layout that fits, from an exhaustive search of the layout space, explained.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "choice.hpp"
#include "commands.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/report.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/units.hpp"
#include "cluster_options.hpp"
#include "model_options.hpp"

namespace gpuplan::cli {

namespace {

struct PlanArgs {
  ModelOptions model;
  std::int64_t seq_len = 2048;
  std::int64_t global_batch = 0;
  std::string precision = "bf16";
  std::string optimizer = "adam";
  bool fused_loss = false;
  ClusterOptions cluster;
  std::vector<std::string> catalog_files;
  std::int64_t gpus = 0;
  std::string gpu;
  std::string gpu_memory;
  std::vector<std::int64_t> tp, pp, vpp, cp, ep, etp, dp, micro_batch;
  std::int64_t max_tp = 0, max_pp = 0, max_cp = 0, max_vpp = 0;
  std::vector<int> zero;
  std::vector<std::string> recompute;
  bool no_partial_recompute = false, no_offload = false, no_sp = false, no_tp_overlap = false;
  double memory_margin = kDefaultMemoryMargin;
  std::string objective = "step-time";
  double price = 0;
  int top = 5;
  int threads = 0;
  bool exhaustive = false;
  bool json = false;
};


// A shell word: as is when it needs no quoting, else in single quotes.
std::string quote(const std::string& w) {
  const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                         "-_./=:+,@%") == std::string::npos;
  if (plain) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Resolved {
  PlanInputs in;
  std::string hardware_flags;   // for the estimate command
};

Resolved resolve(const PlanArgs& a) {
  Resolved r;
  PlanInputs& in = r.in;
  if (!a.model.has_model()) throw InputError("--model", "(none)", "a catalog name or a config.json path");
  in.base.model = a.model.resolve();
  in.base.training.seq_len = a.seq_len;
  if (a.seq_len < 1) throw InputError("--seq-len", std::to_string(a.seq_len), "a positive length");
  if (a.global_batch < 1) throw InputError("--global-batch", std::to_string(a.global_batch), "a global batch in sequences (required)");
  in.base.training.global_batch = a.global_batch;
  in.base.training.precision = pick<Precision>("--precision", a.precision,
                                               {{"fp32", Precision::fp32}, {"fp16", Precision::fp16},
                                                {"bf16", Precision::bf16}, {"fp8", Precision::fp8}});
  in.base.training.optimizer = pick<Optimizer>("--optimizer", a.optimizer,
                                               {{"adam", Optimizer::adam}, {"adamw", Optimizer::adamw},
                                                {"sgd", Optimizer::sgd}, {"sgd-momentum", Optimizer::sgd_momentum},
                                                {"adafactor", Optimizer::adafactor}, {"adam-8bit", Optimizer::adam_8bit}});
  in.base.training.fused_loss = a.fused_loss;
  in.base.overheads = default_overheads();

  HardwareCatalog catalog = HardwareCatalog::builtin();
  for (const auto& f : a.catalog_files) catalog.merge_json(read_text_file(f, "--catalog"), f);
  if (a.gpus < 0) throw InputError("--gpus", std::to_string(a.gpus), "a positive GPU count");
  if (!a.gpu.empty() && !a.gpu_memory.empty()) throw InputError("--gpu-memory", a.gpu_memory, "either --gpu or --gpu-memory");
  // The cluster exactly as `gpuplan estimate` resolves it from the same flags.
  const ResolvedCluster cluster = a.cluster.resolve(catalog, a.gpu, a.gpus > 0 ? a.gpus : 1);
  in.gpu = cluster.gpu;
  in.fabric = cluster.fabric;
  in.base.capacity_bytes = cluster.gpu.usable_memory_bytes;
  // Host memory and NVMe of a node bound the offloaded bytes when the catalog states them.
  if (!a.cluster.system.empty()) {
    in.system = catalog.system(a.cluster.system);
  } else {
    const std::string text = read_text_file(a.cluster.topology, "--topology");
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') in.system = cluster_from_json(catalog, text, a.cluster.topology).system;
  }
  if (a.cluster.system.empty()) {
    r.hardware_flags = "--topology " + quote(a.cluster.topology);
    if (a.cluster.nodes != -1) r.hardware_flags += fmt::format(" --nodes {}", a.cluster.nodes);
    if (a.cluster.nic_GBps != 0) r.hardware_flags += fmt::format(" --nic-GBps {}", a.cluster.nic_GBps);
  } else {
    r.hardware_flags = fmt::format("--system {} --nodes {}", a.cluster.system, in.fabric.nodes);
  }
  if (!a.gpu.empty()) r.hardware_flags += " --gpu " + a.gpu;
  for (const auto& f : a.catalog_files) r.hardware_flags += " --catalog " + quote(f);
  if (!a.gpu_memory.empty()) {
    in.base.capacity_bytes = parse_bytes(a.gpu_memory, "--gpu-memory");
    if (in.base.capacity_bytes <= 0) throw InputError("--gpu-memory", a.gpu_memory, "a positive size");
    r.hardware_flags += " --gpu-memory " + a.gpu_memory;
  }
  const std::int64_t cluster_gpus = static_cast<std::int64_t>(in.fabric.nodes) * std::max(1, in.fabric.gpus_per_node);
  if (a.gpus != 0) {
    if (a.gpus > cluster_gpus)
      throw InputError("--gpus", std::to_string(a.gpus), fmt::format("1 to the cluster's {} GPUs", cluster_gpus));
    in.gpus = a.gpus;
  }

  SearchSpace& s = in.space;
  auto positive = [](const char* flag, const std::vector<std::int64_t>& v) {
    for (auto x : v)
      if (x < 1) throw InputError(flag, std::to_string(x), "positive integers, comma-separated");
    return v;
  };
  s.tp = positive("--tp", a.tp);
  s.pp = positive("--pp", a.pp);
  s.vpp = positive("--vpp", a.vpp);
  s.cp = positive("--cp", a.cp);
  s.ep = positive("--ep", a.ep);
  s.etp = positive("--etp", a.etp);
  s.dp = positive("--dp", a.dp);
  s.micro_batch = positive("--micro-batch", a.micro_batch);
  s.max_tp = a.max_tp;
  s.max_pp = a.max_pp;
  s.max_cp = a.max_cp;
  s.max_vpp = a.max_vpp;
  for (int z : a.zero)
    if (z < 0 || z > 3) throw InputError("--zero", std::to_string(z), "stages 0, 1, 2, 3 (comma-separated)");
  s.zero = a.zero;
  for (const auto& rc : a.recompute)
    s.recompute.push_back(pick<Recompute>("--recompute", rc, {{"none", Recompute::none},
                                                              {"selective", Recompute::selective},
                                                              {"full", Recompute::full}}));
  s.partial_recompute = !a.no_partial_recompute;
  s.offload = !a.no_offload;
  if (a.no_sp) s.sequence_parallel = {false};
  if (a.no_tp_overlap) s.tp_overlap = {false};
  in.memory_margin = a.memory_margin;
  in.objective = pick<Objective>("--objective", a.objective,
                                 {{"step-time", Objective::step_time}, {"tokens-per-s", Objective::tokens_per_s},
                                  {"cost", Objective::cost}});
  in.price_per_gpu_hour = a.price;
  if (a.price < 0) throw InputError("--price-per-gpu-hour", fmt::format("{}", a.price), "a non-negative price");
  if (a.top < 1 || a.top > 1000) throw InputError("--top", std::to_string(a.top), "1 to 1000");
  in.top_k = a.top;
  if (a.threads < 0 || a.threads > 1024) throw InputError("--threads", std::to_string(a.threads), "0 (all cores) to 1024");
  in.threads = a.threads;
  in.prune = !a.exhaustive;
  return r;
}

// The model overrides given to plan, as flags of `gpuplan estimate`.
std::string model_flags(const ModelOptions& m) {
  std::string s = "--model " + quote(m.model);
  for (const auto& [flag, v] : {std::pair{"--layers", m.layers}, {"--hidden", m.hidden}, {"--heads", m.heads},
                                {"--kv-heads", m.kv_heads}, {"--head-dim", m.head_dim}, {"--ffn-hidden", m.ffn_hidden},
                                {"--vocab", m.vocab}, {"--max-positions", m.max_positions}, {"--experts", m.experts},
                                {"--top-k", m.top_k}, {"--expert-ffn-hidden", m.expert_ffn_hidden}})
    if (v) s += fmt::format(" {} {}", flag, *v);
  if (m.mlp) s += " --mlp " + *m.mlp;
  if (m.norm) s += " --norm " + *m.norm;
  if (m.tied_embeddings) s += *m.tied_embeddings ? " --tied-embeddings" : " --untied-embeddings";
  return s;
}

std::string estimate_command(const PlanArgs& a, const Resolved& r, const Plan& p) {
  std::string cmd = fmt::format("gpuplan estimate {} {} --seq-len {} --global-batch {}", model_flags(a.model),
                                r.hardware_flags, a.seq_len, a.global_batch);
  if (a.precision != "bf16") cmd += " --precision " + a.precision;
  if (a.optimizer != "adam") cmd += " --optimizer " + a.optimizer;
  if (a.fused_loss) cmd += " --fused-loss";
  return cmd + " " + layout_flags(p);
}

nlohmann::json layout_json(const Plan& p) {
  const Layout& l = p.layout;
  return {{"gpus", l.gpus},
          {"tp", l.tp},
          {"pp", l.pp},
          {"vpp", l.vpp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"etp", l.etp},
          {"dp", l.dp},
          {"micro_batch", p.micro_batch},
          {"microbatches", p.microbatches},
          {"sequence_parallel", l.sequence_parallel},
          {"tp_overlap", p.tp_overlap},
          {"zero", l.zero},
          {"recompute", to_string(l.recompute)},
          {"recompute_layers", l.recompute_layers},
          {"offload", to_string(l.offload)},
          {"offload_target", to_string(l.offload_target)},
          {"pp_schedule", to_string(l.schedule)}};
}

// A plan as `gpuplan estimate --json` prints it ("time", "throughput", "memory"), with its layout, the usable
// memory under the margin and the command that reproduces it.
nlohmann::json plan_json(const PlanArgs& a, const Resolved& r, const Plan& p) {
  const EstimateInputs est = plan_estimate_inputs(r.in, p);
  nlohmann::json j = estimate_json(est, p.time, false);
  j["layout"] = layout_json(p);
  j["usable_bytes"] = p.usable_bytes;
  j["command"] = estimate_command(a, r, p);
  if (p.cost_per_mtokens > 0) j["cost_per_million_tokens"] = p.cost_per_mtokens;
  return j;
}

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / kGB); }

std::string layout_line(const Plan& p) {
  const Layout& l = p.layout;
  std::string s = fmt::format("TP={} PP={}", l.tp, l.pp);
  if (l.vpp > 1) s += fmt::format(" VPP={}", l.vpp);
  if (l.cp > 1) s += fmt::format(" CP={}", l.cp);
  if (l.ep > 1) s += fmt::format(" EP={} ETP={}", l.ep, l.etp);
  s += fmt::format(" DP={} micro-batch={} ({} microbatches) ZeRO-{}", l.dp, p.micro_batch, p.microbatches, l.zero);
  if (l.sequence_parallel) s += " SP";
  if (p.tp_overlap) s += " TP-overlap";
  if (l.recompute != Recompute::none)
    s += fmt::format(" recompute={}{}", to_string(l.recompute),
                     l.recompute_layers >= 0 ? fmt::format("({} layers/stage)", l.recompute_layers) : "");
  if (l.offload != Offload::none) s += fmt::format(" offload={} to {}", to_string(l.offload), to_string(l.offload_target));
  if (l.gpus != 0) s += fmt::format(" on {} GPUs", l.gpus);
  return s;
}

void print_text(const PlanArgs& a, const Resolved& r, const PlanResult& res) {
  const PlanInputs& in = r.in;
  fmt::print("Plan for {} on {} ({} GPUs), seq {} x global batch {}, objective {}\n", in.base.model->name,
             in.fabric.name, in.gpus > 0 ? in.gpus : static_cast<std::int64_t>(in.fabric.nodes) * in.fabric.gpus_per_node,
             a.seq_len, a.global_batch, to_string(in.objective));
  fmt::print("Searched {} layouts: {} evaluated, {} fit, {} pruned by memory bounds, {} by the time bound, in {:.3f} s\n",
             res.space, res.evaluated, res.feasible, res.pruned_states, res.pruned_time, res.search_seconds);
  fmt::print("Usable memory per GPU: {} ({} minus the {:.0f}% margin)\n\n",
             gb(static_cast<double>(in.base.capacity_bytes) * (1 - in.memory_margin)),
             gb(static_cast<double>(in.base.capacity_bytes)), 100 * in.memory_margin);
  if (res.plans.empty()) {
    fmt::print("Nothing fits. The layouts closest to fitting:\n");
    for (const Plan& p : res.near_misses) {
      fmt::print("  {}\n    needs {} per GPU, {} usable: lacks {}\n", layout_line(p), gb(static_cast<double>(p.memory_bytes)),
                 gb(static_cast<double>(p.usable_bytes)), gb(static_cast<double>(p.memory_bytes - p.usable_bytes)));
      fmt::print("    {}\n", estimate_command(a, r, p));
    }
    fmt::print("Options: more GPUs (--nodes), --fused-loss, an 8-bit optimizer, or allow offload (drop --no-offload).\n");
    return;
  }
  int rank = 0;
  for (const Plan& p : res.plans) {
    ++rank;
    fmt::print("#{} {}\n", rank, layout_line(p));
    fmt::print("   step {:.3f} s, {:.0f} tokens/s ({:.0f} per GPU), MFU {:.1f}%", p.time.step_s, p.time.tokens_per_s,
               p.time.tokens_per_s_per_gpu, 100 * p.time.mfu);
    if (p.cost_per_mtokens > 0) fmt::print(", ${:.3f} per million tokens", p.cost_per_mtokens);
    fmt::print("\n   memory {} of {} usable (worst stage {}, peak in {})\n", gb(static_cast<double>(p.memory_bytes)),
               gb(static_cast<double>(p.usable_bytes)), p.memory.worst_stage, p.memory.worst().peak_phase);
    const StageMemory& w = p.memory.worst();
    fmt::print("     weights {}  master {}  grads {}  optimizer {}  activations {}  logits {}  buffers {}  runtime {}\n",
               gb(static_cast<double>(w.weights)), gb(static_cast<double>(w.master_weights)),
               gb(static_cast<double>(w.gradients)), gb(static_cast<double>(w.optimizer_states)),
               gb(static_cast<double>(w.activations)), gb(static_cast<double>(w.logits)),
               gb(static_cast<double>(w.comm_buffers)), gb(static_cast<double>(w.runtime)));
    std::string terms;
    for (const auto& [name, t] : p.time.breakdown)
      if (t > 0) terms += fmt::format("  {} {:.3f}", name, t);
    fmt::print("   time (s):{}\n", terms);
    fmt::print("   reproduce: {}\n\n", estimate_command(a, r, p));
  }
  if (!res.why_winner.empty()) {
    fmt::print("Why #1 wins:\n");
    for (const auto& line : res.why_winner) fmt::print("  - {}\n", line);
  }
  if (!res.sensitivity.empty()) {
    fmt::print("Sensitivity of #1 (best layout with one choice changed):\n");
    for (const Sensitivity& s : res.sensitivity) {
      if (s.fits) fmt::print("  {:<32} {:+.1f}% step time   {}\n", s.change, 100 * s.delta, s.note);
      else fmt::print("  {:<32} {}\n", s.change, s.note);
    }
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Search every layout for the fastest one that fits, and explain it");
  a->model.add_to(*cmd);
  const char* training = "Training";
  cmd->add_option("--seq-len", a->seq_len, "Sequence length (tokens)")->capture_default_str()->group(training);
  cmd->add_option("--global-batch", a->global_batch, "Global batch in sequences (kept fixed)")->required()->group(training);
  cmd->add_option("--precision", a->precision, "fp32|fp16|bf16|fp8")->capture_default_str()->group(training);
  cmd->add_option("--optimizer", a->optimizer, "adam|adamw|sgd|sgd-momentum|adafactor|adam-8bit")
      ->capture_default_str()->group(training);
  cmd->add_flag("--fused-loss", a->fused_loss, "Fused output layer + cross-entropy (no logits kept)")->group(training);
  const char* hw = "Hardware";
  a->cluster.add_to(*cmd);
  cmd->add_option("--catalog", a->catalog_files, "Hardware catalog JSON adding or overriding entries")->group(hw);
  cmd->add_option("--gpus", a->gpus,
                  "Use this many of the cluster's GPUs (default: all; with --system and no --nodes, the nodes they "
                  "need)")->group(hw);
  cmd->add_option("--gpu", a->gpu, "GPU catalog name that computes (default: the system's)")->group(hw);
  cmd->add_option("--gpu-memory", a->gpu_memory, "Usable memory per GPU instead of the catalog's")->group(hw);
  const char* filters = "Search space filters (comma-separated lists)";
  for (auto [flag, target, help] :
       {std::tuple{"--tp", &a->tp, "Tensor-parallel degrees to try"},
        {"--pp", &a->pp, "Pipeline-parallel degrees"},
        {"--vpp", &a->vpp, "Virtual pipeline stages"},
        {"--cp", &a->cp, "Context-parallel degrees"},
        {"--ep", &a->ep, "Expert-parallel degrees"},
        {"--etp", &a->etp, "Expert tensor-parallel degrees"},
        {"--dp", &a->dp, "Data-parallel degrees"},
        {"--micro-batch", &a->micro_batch, "Micro-batch sizes"}})
    cmd->add_option(flag, *target, help)->delimiter(',')->group(filters);
  cmd->add_option("--max-tp", a->max_tp, "Largest TP degree")->group(filters);
  cmd->add_option("--max-pp", a->max_pp, "Largest PP degree")->group(filters);
  cmd->add_option("--max-cp", a->max_cp, "Largest CP degree")->group(filters);
  cmd->add_option("--max-vpp", a->max_vpp, "Largest VPP degree")->group(filters);
  cmd->add_option("--zero", a->zero, "ZeRO stages to try (0-3; 1 = distributed optimizer)")->delimiter(',')->group(filters);
  cmd->add_option("--recompute", a->recompute, "Recompute modes to try: none,selective,full")->delimiter(',')->group(filters);
  cmd->add_flag("--no-partial-recompute", a->no_partial_recompute, "Full recompute of all layers only")->group(filters);
  cmd->add_flag("--no-offload", a->no_offload, "No optimizer or parameter offload")->group(filters);
  cmd->add_flag("--no-sequence-parallel", a->no_sp, "No sequence parallelism")->group(filters);
  cmd->add_flag("--no-tp-overlap", a->no_tp_overlap, "No TP communication overlap")->group(filters);
  const char* ranking = "Ranking and output";
  cmd->add_option("--memory-margin", a->memory_margin, "Fraction of GPU memory kept free (see docs/plan.md)")
      ->capture_default_str()->group(ranking);
  cmd->add_option("--objective", a->objective, "step-time|tokens-per-s|cost")->capture_default_str()->group(ranking);
  cmd->add_option("--price-per-gpu-hour", a->price, "Dollars per GPU-hour (for --objective cost)")->group(ranking);
  cmd->add_option("--top", a->top, "Plans to print")->capture_default_str()->group(ranking);
  cmd->add_option("--threads", a->threads, "Worker threads (0: all cores)")->capture_default_str()->group(ranking);
  cmd->add_flag("--exhaustive", a->exhaustive, "Evaluate every layout (no pruning; same answer, slower)")->group(ranking);
  cmd->add_flag("--json", a->json, "Print JSON (keys: plans, space, evaluated, feasible, search_seconds, ...)");
  cmd->callback([a] {
    const Resolved r = resolve(*a);
    const bool tty = isatty(fileno(stderr)) != 0;
    const auto start = std::chrono::steady_clock::now();
    bool drew = false;
    ProgressCallback progress;
    if (tty) {
      progress = [&](std::uint64_t done, std::uint64_t total) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (elapsed < 1.0 || total == 0) return;
        const double f = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
        const int bar = static_cast<int>(f * 30);
        fmt::print(stderr, "\r[{}{}] {:5.1f}% of {} layouts, {:.1f} s", std::string(static_cast<std::size_t>(bar), '#'),
                   std::string(static_cast<std::size_t>(30 - bar), '.'), 100 * f, total, elapsed);
        drew = true;
      };
    }
    const PlanResult res = search_plans_threaded(r.in, progress);
    if (drew) fmt::print(stderr, "\n");
    if (a->json) {
      nlohmann::json j;
      j["plans"] = nlohmann::json::array();
      for (const Plan& p : res.plans) j["plans"].push_back(plan_json(*a, r, p));
      j["space"] = res.space;
      j["evaluated"] = res.evaluated;
      j["feasible"] = res.feasible;
      j["pruned_by_memory"] = res.pruned_states;
      j["pruned_by_time"] = res.pruned_time;
      j["search_seconds"] = res.search_seconds;
      j["memory_margin"] = r.in.memory_margin;
      j["why_winner"] = res.why_winner;
      j["sensitivity"] = nlohmann::json::array();
      for (const Sensitivity& s : res.sensitivity)
        j["sensitivity"].push_back({{"change", s.change}, {"fits", s.fits}, {"step_s", s.step_s},
                                    {"delta", s.delta}, {"note", s.note}});
      j["near_misses"] = nlohmann::json::array();
      for (const Plan& p : res.near_misses) {
        nlohmann::json n = plan_json(*a, r, p);
        n["lacks_bytes"] = p.memory_bytes - p.usable_bytes;
        j["near_misses"].push_back(n);
      }
      fmt::print("{}\n", j.dump(2));
    } else {
      print_text(*a, r, res);
    }
  });
}

}  // namespace gpuplan::cli
