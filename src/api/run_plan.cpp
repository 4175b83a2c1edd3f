// gpuplan plan: the inputs of the layout search from a request, and its plans as results with the command that
// reproduces each.
#include <fmt/format.h>

#include <algorithm>

#include "api/builders.hpp"
#include "api/fields.hpp"
#include "api/launch_beside.hpp"
#include "api/launch_results.hpp"
#include "api/plan_setup.hpp"
#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "memory/internal.hpp"
#include "util/choices.hpp"
#include "util/shell.hpp"

namespace gpuplan::api {

using detail::PlanSetup;
using Job = PlanSetup;

namespace {

SearchSpace search_space(const SearchOptions& o) {
  SearchSpace s;
  s.tp = o.tp;
  s.pp = o.pp;
  s.vpp = o.vpp;
  s.cp = o.cp;
  s.ep = o.ep;
  s.etp = o.etp;
  s.dp = o.dp;
  s.micro_batch = o.micro_batch;
  s.max_tp = o.max_tp.value_or(0);
  s.max_pp = o.max_pp.value_or(0);
  s.max_cp = o.max_cp.value_or(0);
  s.max_vpp = o.max_vpp.value_or(0);
  for (std::int64_t z : o.zero) s.zero.push_back(static_cast<int>(z));
  for (const auto& rc : o.recompute) s.recompute.push_back(choices::parse(choices::kRecompute, rc, "space.recompute"));
  for (const auto& c : o.cp_comm_type) s.cp_comm.push_back(choices::parse(choices::kCpComm, c, "space.cp_comm_type"));
  s.partial_recompute = o.partial_recompute;
  s.offload = o.offload;
  if (!o.sequence_parallel) s.sequence_parallel = {false};
  if (!o.tp_overlap) s.tp_overlap = {false};
  return s;
}

// Transformer Engine's flash kernel, the same for every layout searched: checked once, as for one layout.
void set_attention_backend(const SearchOptions& o, Layout& base) {
  base.attention_backend = choices::parse(choices::kAttentionBackend, o.attention_backend, "space.attention_backend");
  memory::check_attention_backend(base, "space.attention_backend");
}

void apply_ranking(const RankingOptions& o, PlanInputs& in) {
  in.base.memory_margin = o.memory_margin;
  in.objective = choices::parse(choices::kObjective, o.objective, "ranking.objective");
  in.price_per_gpu_hour = o.price_per_gpu_hour.value_or(0);
  in.top_k = static_cast<int>(o.top);
  in.threads = static_cast<int>(o.threads);
  in.prune = !o.exhaustive;
}

}  // namespace

PlanSetup detail::plan_setup(const PlanRequest& r) {
  Job job;
  PlanInputs& in = job.inputs;
  if (!r.model.given()) throw InputError("model", "(none)", "a catalog name or a config.json path");
  in.base.model = detail::resolve_model(r.model, r.overrides);
  for (const std::int64_t ep : r.space.ep) detail::check_expert_degree(*in.base.model, "space.ep", ep, false);
  for (const std::int64_t etp : r.space.etp) detail::check_expert_degree(*in.base.model, "space.etp", etp, true);
  if (!r.training.global_batch || *r.training.global_batch < 1)
    throw InputError("training.global_batch",
                     r.training.global_batch ? std::to_string(*r.training.global_batch) : "(none)",
                     "a global batch in sequences (required)");
  in.base.training = detail::resolve_training(r.training);
  in.base.layout.framework = choices::parse(choices::kFramework, r.training.framework, "training.framework");
  in.base.layout.impl = detail::default_impl(in.base.layout.framework);
  in.base.overheads = detail::resolve_overheads(r.hardware);
  detail::apply_zero_buckets(r.training, in.base.layout.framework, in.base.overheads);
  const auto catalog_owner = detail::resolve_catalog(r.hardware.catalog, "hardware.catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  if (r.hardware.gpu && r.hardware.gpu_memory)
    throw InputError("hardware.gpu_memory", *r.hardware.gpu_memory, "either gpu or hardware.gpu_memory");
  // The cluster exactly as `gpuplan estimate` resolves it from the same options.
  job.cluster = detail::resolve_cluster(r.cluster, catalog, r.hardware.gpu, r.gpus.value_or(0) > 0 ? *r.gpus : 1);
  detail::require_known_gpu(job.cluster);
  in.gpu = job.cluster.gpu;
  in.fabric = job.cluster.fabric;
  if (!r.perf.empty() || r.comm_calibration)
    in.perf = detail::apply_calibration_files(r.perf, r.comm_calibration, in.gpu, in.fabric);
  in.system = job.cluster.system;  // host memory and NVMe of a node bound the offloaded bytes when known
  in.base.node = detail::resolve_node_storage(&job.cluster.system, in.fabric.gpus_per_node, r.hardware);
  in.base.capacity_bytes = job.cluster.gpu.usable_memory_bytes;
  in.base.gpu = job.cluster.gpu.name;
  in.base.gpu_fp8_any_layout = job.cluster.gpu.fp8_gemm_any_layout();
  if (r.hardware.gpu_memory) {
    in.base.gpu.clear();
    in.base.capacity_bytes = parse_size(*r.hardware.gpu_memory, "hardware.gpu_memory");
    if (in.base.capacity_bytes <= 0) throw InputError("hardware.gpu_memory", *r.hardware.gpu_memory, "a positive size");
  }
  const std::int64_t cluster_gpus = static_cast<std::int64_t>(in.fabric.nodes) * std::max(1, in.fabric.gpus_per_node);
  if (r.gpus) {
    if (*r.gpus > cluster_gpus)
      throw InputError("gpus", std::to_string(*r.gpus), fmt::format("1 to the cluster's {} GPUs", cluster_gpus));
    in.gpus = *r.gpus;
  }
  in.space = search_space(r.space);
  set_attention_backend(r.space, in.base.layout);
  apply_ranking(r.ranking, in);
  return job;
}

namespace {

// The model, as options of `gpuplan estimate`.
std::string model_flags(const PlanRequest& r) {
  const ModelOverrides& o = r.overrides;
  // A model a launch file builds has no name to give: the file itself names it.
  std::string s = r.launch.from ? "--from " + gpuplan::detail::shell_quote(r.launch.from->path)
                                : "--model " + gpuplan::detail::shell_quote(r.model.name_or_path);
  for (const auto& [flag, v] : {std::pair{"--layers", o.layers}, {"--hidden", o.hidden}, {"--heads", o.heads},
                                {"--kv-heads", o.kv_heads}, {"--head-dim", o.head_dim}, {"--ffn-hidden", o.ffn_hidden},
                                {"--vocab", o.vocab}, {"--max-positions", o.max_positions}, {"--experts", o.experts},
                                {"--top-k", o.top_k}, {"--expert-ffn-hidden", o.expert_ffn_hidden}})
    if (v) s += fmt::format(" {} {}", flag, *v);
  if (o.mlp) s += " --mlp " + *o.mlp;
  if (o.norm) s += " --norm " + *o.norm;
  if (o.tied_embeddings) s += *o.tied_embeddings ? " --tied-embeddings" : " --untied-embeddings";
  return s;
}

// The machines, as options of `gpuplan estimate`: the node count the search used.
std::string hardware_flags(const PlanRequest& r, const Job& job) {
  std::string s;
  if (r.cluster.topology) {
    s = "--topology " + gpuplan::detail::shell_quote(r.cluster.topology->path);
    if (r.cluster.nodes) s += fmt::format(" --nodes {}", *r.cluster.nodes);
    if (r.cluster.nic_GBps && *r.cluster.nic_GBps != 0) s += fmt::format(" --nic-GBps {}", *r.cluster.nic_GBps);
  } else {
    s = fmt::format("--system {} --nodes {}", r.cluster.system.value_or(""), job.inputs.fabric.nodes);
  }
  if (r.hardware.gpu) s += " --gpu " + *r.hardware.gpu;
  for (const auto& f : r.hardware.catalog) s += " --catalog " + gpuplan::detail::shell_quote(f.path);
  if (r.hardware.gpu_memory) s += " --gpu-memory " + *r.hardware.gpu_memory;
  if (r.hardware.cuda_context) s += " --cuda-context " + gpuplan::detail::shell_quote(*r.hardware.cuda_context);
  if (r.hardware.nccl_per_comm) s += " --nccl-per-comm " + gpuplan::detail::shell_quote(*r.hardware.nccl_per_comm);
  if (r.hardware.allocator_factor) s += fmt::format(" --allocator-factor {}", *r.hardware.allocator_factor);
  // The node capacities the search checked offload against.
  if (r.hardware.host_memory) s += " --host-memory " + gpuplan::detail::shell_quote(*r.hardware.host_memory);
  if (r.hardware.nvme_capacity) s += " --nvme-capacity " + gpuplan::detail::shell_quote(*r.hardware.nvme_capacity);
  // The user's measurements the search priced with.
  for (const auto& f : r.perf) s += " --perf " + gpuplan::detail::shell_quote(f.path);
  if (r.comm_calibration) s += " --comm-calibration " + gpuplan::detail::shell_quote(r.comm_calibration->path);
  return s;
}

// The training options the plan was searched under that differ from estimate's defaults.
std::string training_flags(const TrainingOptions& t, const TrainingConfig& resolved) {
  const TrainingOptions defaults;
  std::string flags;
  if (t.precision != defaults.precision) flags += " --precision " + t.precision;
  if (t.optimizer != defaults.optimizer) flags += " --optimizer " + t.optimizer;
  if (t.grad_dtype != defaults.grad_dtype) flags += " --grad-dtype " + t.grad_dtype;
  if (!t.master_weights) flags += " --no-master-weights";
  if (t.dropout != defaults.dropout) flags += fmt::format(" --dropout {}", t.dropout);
  if (resolved.loss != Loss::unfused) flags += fmt::format(" --loss {}", to_string(resolved.loss));
  if (t.te_version != defaults.te_version) flags += " --te-version " + t.te_version;
  if (t.megatron_version != defaults.megatron_version) flags += " --megatron-version " + t.megatron_version;
  if (!t.grad_nan_check) flags += " --no-grad-nan-check";
  if (t.fp8_param_gather) flags += " --fp8-param-gather";
  if (t.vocab_divisible_by) flags += fmt::format(" --make-vocab-size-divisible-by {}", *t.vocab_divisible_by);
  if (t.moe_imbalance != defaults.moe_imbalance) flags += fmt::format(" --moe-imbalance {}", t.moe_imbalance);
  if (t.moe_capacity_factor) flags += fmt::format(" --moe-capacity-factor {}", *t.moe_capacity_factor);
  if (t.moe_pad_to_capacity) flags += " --moe-pad-to-capacity";
  if (t.moe_dispatcher != defaults.moe_dispatcher) flags += " --moe-dispatcher " + t.moe_dispatcher;
  if (t.framework != defaults.framework) flags += " --framework " + t.framework;
  if (resolved.compile) flags += " --compile";
  return flags;
}

// With --from, what the plan leaves at its default is stated too, so that the file's own choices do not return.
std::string explicit_defaults(const PlanRequest& r, const Plan& p) {
  if (!r.launch.from) return {};
  const Layout& l = p.layout;
  std::string s;
  if (l.vpp <= 1) s += " --vpp 1";
  if (l.cp <= 1) s += " --cp 1";
  if (l.ep <= 1) s += " --ep 1";
  if (!l.sequence_parallel) s += " --no-sequence-parallel";
  if (!p.tp_overlap) s += " --no-tp-overlap";
  if (l.recompute == Recompute::none) s += " --recompute none";
  if (l.offload == Offload::none) s += " --offload none";
  return s + " --dp-overlap";
}

std::string backend_flag(const Plan& p) {
  const AttentionBackend b = p.layout.attention_backend;
  return b == AttentionBackend::automatic ? "" : fmt::format(" --attention-backend {}", to_string(b));
}

std::string estimate_command(const PlanRequest& r, const Job& job, const Plan& p) {
  return fmt::format("gpuplan estimate {} {} --seq-len {} --global-batch {}{} {}{}", model_flags(r),
                     hardware_flags(r, job), r.training.seq_len, r.training.global_batch.value_or(0),
                     training_flags(r.training, job.inputs.base.training), layout_flags(p) + backend_flag(p),
                     explicit_defaults(r, p));
}

PlanLayout plan_layout(const Plan& p, const Layout& l) {
  return PlanLayout{l.gpus,  l.tp, l.pp, l.vpp, l.cp, l.ep, l.etp, l.dp, p.micro_batch, p.microbatches,
                    to_string(l.cp_comm), l.cp_a2a, l.sequence_parallel, p.tp_overlap, l.zero, to_string(l.recompute), l.recompute_layers,
                    to_string(l.offload), to_string(l.offload_target), to_string(l.schedule),
                    l.first_stage_layers, l.last_stage_layers};
}

}  // namespace

PlanReport detail::plan_report(const PlanRequest& r, const PlanSetup& job, const Plan& p) {
  PlanReport out;
  const EstimateInputs est = plan_estimate_inputs(job.inputs, p);
  out.time = detail::time_report(p.time);
  out.throughput = detail::throughput_report(p.time, est);
  out.memory = detail::memory_result(est.memory, false);
  out.layout = plan_layout(p, p.layout);
  for (const Layout& equivalent : p.equivalents) out.equivalents.push_back(plan_layout(p, equivalent));
  out.usable_bytes = p.usable_bytes;
  out.command = estimate_command(r, job, p);
  if (p.cost_per_mtokens > 0) out.cost_per_million_tokens = p.cost_per_mtokens;
  return out;
}

namespace {

PlanJob job_summary(const PlanRequest& r, const Job& job) {
  const PlanInputs& in = job.inputs;
  const std::int64_t gpus =
      in.gpus > 0 ? in.gpus : static_cast<std::int64_t>(in.fabric.nodes) * in.fabric.gpus_per_node;
  return PlanJob{in.base.model->name,  in.fabric.name,  to_string(in.objective), gpus, r.training.seq_len,
                 r.training.global_batch.value_or(0), in.base.capacity_bytes, r.space.offload,
                 detail::job_warnings(in.base)};
}

// The launch file's own layout, estimated for the same job on the same cluster as the search.
PlanBaseline baseline_of(const PlanRequest& r, const PlanResult& found) {
  nlohmann::json e = {{"from", {{"path", r.launch.from->path}, {"text", r.launch.from->text.value_or("")}}},
                      {"seq_len", r.training.seq_len}};
  if (r.training.global_batch) e["global_batch"] = *r.training.global_batch;
  if (r.cluster.system) e["system"] = *r.cluster.system;
  if (r.cluster.nodes) e["nodes"] = *r.cluster.nodes;
  if (r.cluster.topology) e["topology"] = {{"path", r.cluster.topology->path}, {"text", r.cluster.topology->text.value_or("")}};
  if (r.hardware.gpu) e["gpu"] = *r.hardware.gpu;
  if (r.hardware.gpu_memory) e["gpu_memory"] = *r.hardware.gpu_memory;
  if (r.hardware.cuda_context) e["cuda_context"] = *r.hardware.cuda_context;
  if (r.hardware.nccl_per_comm) e["nccl_per_comm"] = *r.hardware.nccl_per_comm;
  if (r.hardware.allocator_factor) e["allocator_factor"] = *r.hardware.allocator_factor;
  if (r.gpus) e["gpus"] = *r.gpus;
  for (const auto& f : r.perf) e["perf"].push_back({{"path", f.path}, {"text", f.text.value_or("")}});
  if (r.comm_calibration)
    e["comm_calibration"] = {{"path", r.comm_calibration->path}, {"text", r.comm_calibration->text.value_or("")}};
  if (r.model.config) e["model"] = {{"name_or_path", r.model.name_or_path}, {"config", *r.model.config}};
  else e["model"] = r.model.name_or_path;
  PlanBaseline b;
  try {
    const EstimateResult estimate = run(from_json<EstimateRequest>(e));
    b.step_s = estimate.time.step_s;
    b.memory_bytes = estimate.memory.per_gpu.total;
    b.fits = estimate.memory.fits;
    if (!found.plans.empty() && found.plans.front().time.step_s > 0)
      b.speedup = estimate.time.step_s / found.plans.front().time.step_s;
  } catch (const InputError& error) {
    b.note = error.what();
  }
  return b;
}

PlanResult plan_of(const PlanRequest& r, ProgressCallback progress, const ParallelRunner* runner) {
  detail::check_bounds(r);
  const Job job = detail::plan_setup(r);
  const gpuplan::PlanResult found = search_plans(job.inputs, std::move(progress), runner);
  PlanResult out;
  out.job = job_summary(r, job);
  for (const Plan& p : found.plans) out.plans.push_back(detail::plan_report(r, job, p));
  out.space = found.space;
  out.evaluated = found.evaluated;
  out.feasible = found.feasible;
  out.pruned_by_memory = found.pruned_states;
  out.pruned_by_time = found.pruned_time;
  out.search_seconds = found.search_seconds;
  out.memory_margin = job.inputs.base.memory_margin;
  out.why_winner = found.why_winner;
  for (const Sensitivity& s : found.sensitivity)
    out.sensitivity.push_back(SensitivityReport{s.change, s.fits, s.step_s, s.delta, s.note});
  for (const Plan& p : found.near_misses) {
    PlanReport miss = detail::plan_report(r, job, p);
    miss.lacks_bytes = p.memory_bytes - p.usable_bytes;
    out.near_misses.push_back(std::move(miss));
  }
  out.launch_config = detail::launch_report(r.launch);
  if (r.launch.from) out.baseline = baseline_of(r, out);
  if (r.launch.emit && !found.plans.empty()) {
    const Plan& best = found.plans.front();
    const EstimateInputs est = plan_estimate_inputs(job.inputs, best);
    const std::int64_t per_host = gpus_per_host(est.memory.node, job.inputs.fabric.gpus_per_node);
    out.launch_files = detail::launch_files(r.launch, {r.model.name_or_path, est.memory, est.time, per_host,
                                                       best.time.step_s, out.plans.front().memory.per_gpu.total});
  }
  return out;
}

}  // namespace

PlanResult run(const PlanRequest& r, ProgressCallback progress, const ParallelRunner* runner) {
  return detail::naming_launch_file(r.launch, [&] { return plan_of(r, std::move(progress), runner); });
}

}  // namespace gpuplan::api
