// The table of framework rules. Each entry cites the file and line of the release in release_of(); the texts are
// ours. Rules every framework shares with gpuplan's own layout checks (TP dividing the heads, EP the experts) are
// checked by resolve_layout already and are not repeated here.
#include "framework/rules.hpp"

#include <fmt/format.h>

#include <array>

#include "framework/titan_layer_ac.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

using Broken = std::optional<std::string>;

constexpr std::array<Release, 4> kReleases = {{
    {Framework::megatron, "Megatron-LM", "core 0.15 (main @ d98e8a64ddf3, 2026-08-22)"},
    {Framework::deepspeed, "DeepSpeed", "0.18 (master @ edaa72212672, 2026-08-22) with Megatron-DeepSpeed"},
    {Framework::torchtitan, "torchtitan", "v0.2.2 (73a0e6979dd1, 2026-02-20), the last release with TOML jobs"},
    {Framework::nemo, "NeMo", "2.x (main @ 8cfedd720346, 2025-09-20) on Megatron-Core"},
}};

const Layout& layout(const JobFacts& job) { return *job.layout; }
std::int64_t layers(const JobFacts& job) { return job.model != nullptr ? job.model->layers : 0; }
bool moe(const JobFacts& job) { return job.model != nullptr && job.model->is_moe(); }

// ---- Megatron-LM (and NeMo, which hands its parallel sizes to Megatron-Core) ----

Broken megatron_cp_sequence(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.cp <= 1 || job.training->seq_len % (2 * l.cp) == 0) return {};
  return fmt::format("seq_len {} with cp {} (2 x cp = {})", job.training->seq_len, l.cp, 2 * l.cp);
}

Broken megatron_expert_grid(const JobFacts& job) {
  const Layout& l = layout(job);
  const std::int64_t grid = l.etp * l.ep * l.pp;
  if (l.gpus % grid == 0) return {};
  return fmt::format("{} GPUs with etp x ep x pp = {} x {} x {} = {}", l.gpus, l.etp, l.ep, l.pp, grid);
}

Broken megatron_tp_overlap(const JobFacts& job) {
  if (!job.tp_overlap || layout(job).sequence_parallel || layout(job).tp <= 1) return {};
  return std::string("tp_overlap without sequence_parallel");
}

Broken megatron_param_offload(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.offload != Offload::optimizer_and_params) return {};
  return std::string("offload optimizer+params");
}

Broken megatron_nvme_offload(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.offload == Offload::none || l.offload_target != OffloadTarget::nvme) return {};
  return std::string("offload to nvme");
}

Broken optimizer_offload_needs_sharding(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.offload == Offload::none || l.zero >= 1) return {};
  return fmt::format("offload {} with zero 0", l.offload == Offload::optimizer ? "optimizer" : "optimizer+params");
}

Broken megatron_fp8_param_gather(const JobFacts& job) {
  if (!job.training->fp8_param_gather || layout(job).zero >= 1) return {};
  return std::string("fp8_param_gather with zero 0");
}

Broken megatron_interleaving_needs_pp(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.vpp <= 1 || l.pp > 1) return {};
  return fmt::format("vpp {} with pp 1", l.vpp);
}

// ---- DeepSpeed (Megatron-DeepSpeed supplies TP and PP; DeepSpeed owns data parallelism and ZeRO) ----

Broken deepspeed_pipeline_zero(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.pp <= 1 || l.zero <= 1) return {};
  return fmt::format("pp {} with zero {}", l.pp, l.zero);
}

Broken deepspeed_param_offload_stage(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.offload != Offload::optimizer_and_params || l.zero == 3) return {};
  return fmt::format("offload optimizer+params with zero {}", l.zero);
}

Broken deepspeed_moe_zero3(const JobFacts& job) {
  const Layout& l = layout(job);
  if (!moe(job) || l.zero != 3) return {};
  return std::string("a MoE model with zero 3");
}

Broken deepspeed_expert_groups(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.ep <= 1 && l.etp == l.tp) return {};
  if (l.etp != 1 && l.ep > 1) return fmt::format("ep {} with etp {}", l.ep, l.etp);
  if (l.ep > 1 && l.dp % l.ep != 0) return fmt::format("ep {} with dp {}", l.ep, l.dp);
  return {};
}

Broken deepspeed_no_ring_cp(const JobFacts& job) {
  if (layout(job).cp <= 1) return {};
  return fmt::format("cp {}", layout(job).cp);
}

Broken deepspeed_no_interleaving(const JobFacts& job) {
  if (layout(job).vpp <= 1) return {};
  return fmt::format("vpp {}", layout(job).vpp);
}

Broken deepspeed_sequence_parallel(const JobFacts& job) {
  if (!layout(job).sequence_parallel) return {};
  return std::string("sequence_parallel");
}

Broken deepspeed_selective_recompute(const JobFacts& job) {
  if (layout(job).recompute != Recompute::selective) return {};
  return std::string("recompute selective");
}

Broken deepspeed_no_flex_dispatcher(const JobFacts& job) {
  if (!moe(job) || job.training->moe_dispatcher != MoeDispatcher::flex) return {};
  return std::string("moe_dispatcher flex");
}

// ---- torchtitan ----

Broken torchtitan_deepep(const JobFacts& job) {
  const Layout& l = layout(job);
  if (!moe(job) || job.training->moe_dispatcher != MoeDispatcher::flex || (l.ep > 1 && l.etp == 1)) return {};
  return fmt::format("moe_dispatcher flex with ep {} and etp {}", l.ep, l.etp);
}

Broken torchtitan_expert_tp(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.ep <= 1 || l.etp == 1 || l.etp == l.tp) return {};
  return fmt::format("etp {} with tp {}", l.etp, l.tp);
}

Broken torchtitan_expert_mesh(const JobFacts& job) {
  const Layout& l = layout(job);
  const std::int64_t borrowed = l.dp * l.cp * l.tp;   // dp_shard x cp x tp: EP takes its ranks from these
  const std::int64_t expert = l.ep * (l.ep > 1 ? l.etp : 1);
  if (l.ep <= 1 || borrowed % expert == 0) return {};
  return fmt::format("ep x etp = {} with dp_shard x cp x tp = {}", expert, borrowed);
}

Broken torchtitan_sequence(const JobFacts& job) {
  const Layout& l = layout(job);
  const std::int64_t divisor = l.tp * 2 * l.cp;
  if (job.training->seq_len % divisor == 0) return {};
  return fmt::format("seq_len {} with tp x 2 x cp = {}", job.training->seq_len, divisor);
}

// FSDP2 runs when dp_shard x cp > 1; below that nothing is sharded, and plain DDP works alone.
Broken torchtitan_sharding(const JobFacts& job) {
  const Layout& l = layout(job);
  const bool fsdp = l.dp * l.cp > 1;
  if (!fsdp) return l.zero == 0 ? Broken{} : fmt::format("zero {} with dp x cp = 1 (no FSDP)", l.zero);
  if (l.zero == 2 || l.zero == 3) return {};
  if (l.zero == 0 && l.tp == 1 && l.pp == 1 && l.cp == 1) return {};
  return l.zero == 1 ? std::string("zero 1")
                     : fmt::format("zero 0 (DDP) with tp {}, pp {}, cp {}", l.tp, l.pp, l.cp);
}

Broken torchtitan_stages_per_rank(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.vpp <= 2 && l.first_stage_layers < 0 && l.last_stage_layers < 0) return {};
  return l.vpp > 2 ? fmt::format("vpp {}", l.vpp) : std::string("an uneven first/last stage");
}

Broken torchtitan_offload(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.offload == Offload::none) return {};
  if (l.offload == Offload::optimizer_and_params && l.offload_target == OffloadTarget::cpu && l.zero == 3) return {};
  return fmt::format("offload {} to {} with zero {}", l.offload == Offload::optimizer ? "optimizer" : "optimizer+params",
                     l.offload_target == OffloadTarget::cpu ? "cpu" : "nvme", l.zero);
}

Broken torchtitan_partial_recompute(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.recompute != Recompute::full || l.recompute_layers < 0 || layers(job) <= 0) return {};
  const std::int64_t stage_layers = layers(job) / l.pp;
  if (l.recompute_layers >= stage_layers || titan_checkpoint_frequency(stage_layers, l.recompute_layers) > 0) return {};
  return fmt::format("full recompute of {} of the {} layers per stage", l.recompute_layers, stage_layers);
}

Broken non_megatron_cp_comm(const JobFacts& job) {
  const Layout& l = layout(job);
  if (l.cp <= 1 || l.cp_comm == CpComm::p2p) return {};
  return fmt::format("cp_comm_type {}", to_string(l.cp_comm));
}

constexpr std::array<Rule, 27> kRules = {{
    {Framework::megatron, RuleLevel::shape, "layout.cp",
     "with context parallelism the sequence length must be divisible by 2 x cp (each rank keeps two chunks for "
     "causal load balance)",
     "megatron/training/arguments.py:1335-1338", megatron_cp_sequence},
    {Framework::megatron, RuleLevel::shape, "layout.ep",
     "the expert grid etp x ep x pp must divide the world size", "megatron/core/parallel_state.py:874-884",
     megatron_expert_grid},
    {Framework::megatron, RuleLevel::shape, "layout.vpp",
     "interleaving (vpp > 1) needs pipeline parallelism (pp > 1)", "megatron/training/arguments.py:1001-1015",
     megatron_interleaving_needs_pp},
    {Framework::megatron, RuleLevel::states, "timing.tp_overlap",
     "--tp-comm-overlap requires --sequence-parallel", "megatron/training/arguments.py:1441-1442",
     megatron_tp_overlap},
    {Framework::megatron, RuleLevel::states, "layout.offload",
     "Megatron-LM offloads the optimizer only (--optimizer-cpu-offload); parameters stay on the GPU",
     "megatron/training/arguments.py:1884-1894", megatron_param_offload},
    {Framework::megatron, RuleLevel::states, "layout.offload_target",
     "Megatron-LM offloads the optimizer to host memory only; there is no NVMe target",
     "megatron/training/arguments.py:1884-1894", megatron_nvme_offload},
    {Framework::megatron, RuleLevel::states, "layout.offload",
     "--optimizer-cpu-offload works on the distributed optimizer's shards (--use-distributed-optimizer, zero >= 1)",
     "megatron/training/arguments.py:1884-1894", optimizer_offload_needs_sharding},
    {Framework::megatron, RuleLevel::states, "training.fp8_param_gather",
     "--fp8-param-gather needs the distributed optimizer (--use-distributed-optimizer, zero >= 1) or FSDP",
     "megatron/training/arguments.py, validate_args", megatron_fp8_param_gather},
    {Framework::deepspeed, RuleLevel::states, "layout.zero",
     "the pipeline engine supports ZeRO stage 0 or 1 only", "deepspeed/runtime/pipe/engine.py:76-77",
     deepspeed_pipeline_zero},
    {Framework::deepspeed, RuleLevel::states, "layout.offload",
     "offload_param is used by ZeRO stage 3 only (stages 1 and 2 ignore it)",
     "deepspeed/runtime/zero/offload_config.py:22,56", deepspeed_param_offload_stage},
    {Framework::deepspeed, RuleLevel::states, "layout.offload",
     "offload_optimizer offloads ZeRO's optimizer partitions: it needs stage 1, 2 or 3",
     "deepspeed/runtime/zero/offload_config.py:56", optimizer_offload_needs_sharding},
    {Framework::deepspeed, RuleLevel::states, "layout.zero",
     "DeepSpeed's MoE layers are rejected under ZeRO stage 3", "deepspeed/runtime/engine.py:1889-1893",
     deepspeed_moe_zero3},
    {Framework::deepspeed, RuleLevel::shape, "layout.ep",
     "expert-parallel groups are carved from the data-parallel ranks (ep divides dp) and experts are not "
     "tensor-parallel (etp 1)",
     "deepspeed/utils/groups.py:_create_expert_and_data_parallel; deepspeed/module_inject/auto_ep_folding.py:206-254",
     deepspeed_expert_groups},
    {Framework::deepspeed, RuleLevel::shape, "layout.cp",
     "DeepSpeed's sequence parallelism is Ulysses (all-to-all over heads), not Megatron's ring context "
     "parallelism; gpuplan prices ring CP only",
     "deepspeed/runtime/config.py:711-724", deepspeed_no_ring_cp},
    {Framework::deepspeed, RuleLevel::shape, "layout.vpp",
     "the pipeline engine runs one model chunk per stage (TrainSchedule has no interleaving)",
     "deepspeed/runtime/pipe/schedule.py:TrainSchedule", deepspeed_no_interleaving},
    {Framework::deepspeed, RuleLevel::states, "layout.sequence_parallel",
     "AutoTP splits the Linear layers only; Megatron's sequence parallelism between them is not an option",
     "deepspeed/runtime/tensor_parallel/config.py (TPTrainingConfig)", deepspeed_sequence_parallel},
    {Framework::deepspeed, RuleLevel::states, "layout.recompute",
     "DeepSpeed's activation checkpointing recomputes whole layers (no selective recompute)",
     "deepspeed/runtime/activation_checkpointing/checkpointing.py", deepspeed_selective_recompute},
    {Framework::deepspeed, RuleLevel::states, "training.moe_dispatcher",
     "DeepSpeed's MoE layers exchange tokens with their own all-to-all (alltoall); DeepEP is not one of its options",
     "deepspeed/moe/sharded_moe.py (_AllToAll)", deepspeed_no_flex_dispatcher},
    {Framework::torchtitan, RuleLevel::shape, "training.moe_dispatcher",
     "expert_parallel_comm_backend deepep (moe_dispatcher flex) needs ep > 1 and etp 1",
     "torchtitan/models/deepseek_v3/infra/parallelize.py:100-111", torchtitan_deepep},
    {Framework::torchtitan, RuleLevel::shape, "layout.etp",
     "with ep > 1, expert_tensor_parallel_degree must be 1 or equal to tp",
     "torchtitan/distributed/parallel_dims.py:58-59", torchtitan_expert_tp},
    {Framework::torchtitan, RuleLevel::shape, "layout.ep",
     "ep x etp must divide dp_shard x cp x tp (EP borrows ranks from FSDP, CP and TP)",
     "torchtitan/distributed/parallel_dims.py:136-138", torchtitan_expert_mesh},
    {Framework::torchtitan, RuleLevel::shape, "training.seq_len",
     "seq_len must be divisible by tp x 2 x cp (the factor 2 applies even at cp 1)",
     "torchtitan/models/llama3/infra/parallelize.py:69-74", torchtitan_sequence},
    {Framework::torchtitan, RuleLevel::shape, "layout.vpp",
     "a looped schedule builds 2 stages per rank and splits the layers evenly unless pipeline_parallel_layers_per_stage "
     "and the less-layers options say otherwise (gpuplan writes the even split)",
     "torchtitan/distributed/pipeline_parallel.py:70-115", torchtitan_stages_per_rank},
    {Framework::torchtitan, RuleLevel::states, "layout.zero",
     "data parallelism is FSDP2 when dp_shard x cp > 1 (zero 3, or zero 2 with reshard_after_forward never), "
     "nothing sharded below that; plain DDP (zero 0) only without tp, pp and cp; there is no ZeRO-1",
     "torchtitan/models/llama3/infra/parallelize.py:121-151", torchtitan_sharding},
    {Framework::torchtitan, RuleLevel::states, "layout.offload",
     "training.enable_cpu_offload moves FSDP2's parameters, gradients and optimizer states to host memory "
     "together (offload optimizer+params, cpu, zero 3)",
     "torchtitan/models/llama3/infra/parallelize.py:apply_fsdp (CPUOffloadPolicy)", torchtitan_offload},
    {Framework::torchtitan, RuleLevel::states, "layout.recompute_layers",
     "activation_checkpoint.mode full wraps every block, and selective_ac_option N every Nth one: a stage of L "
     "layers recomputes all of them or L / N (rounded down)",
     "torchtitan/distributed/activation_checkpoint.py:_apply_layer_sac", torchtitan_partial_recompute},
    {Framework::torchtitan, RuleLevel::shape, "layout.cp_comm_type",
     "context parallelism is PyTorch's ring attention (experimental.context_parallel_rotate_method passes K/V "
     "between the ranks); Transformer Engine's all-to-all and all-gather exchanges are Megatron-LM and NeMo options",
     "torchtitan/distributed/utils.py create_context_parallel_ctx", non_megatron_cp_comm},
}};

}  // namespace

const Release& release_of(Framework framework) { return kReleases[static_cast<std::size_t>(framework)]; }

std::string_view name_of(Framework framework) {
  switch (framework) {
    case Framework::megatron: return "megatron";
    case Framework::deepspeed: return "deepspeed";
    case Framework::torchtitan: return "torchtitan";
    case Framework::nemo: return "nemo";
  }
  return "megatron";
}

std::span<const Rule> rules() { return kRules; }

bool applies(const Rule& rule, Framework framework) {
  return rule.framework == framework || (framework == Framework::nemo && rule.framework == Framework::megatron);
}

const Rule* first_broken(Framework framework, const JobFacts& job, std::optional<RuleLevel> level) {
  for (const Rule& rule : kRules) {
    if (!applies(rule, framework) || (level && rule.level != *level)) continue;
    if (rule.broken(job)) return &rule;
  }
  return nullptr;
}

void check_job(const JobFacts& job) {
  const Framework framework = job.layout->framework;
  const Rule* rule = first_broken(framework, job);
  if (rule == nullptr) return;
  const Release& release = release_of(rule->framework);
  throw InputError(std::string(rule->field), *rule->broken(job) + " under --framework " + std::string(name_of(framework)),
                   fmt::format("what {} allows: {} ({} {}, {})", release.name, rule->text, release.name,
                               release.version, rule->source));
}

std::vector<std::string> apply_rewrites(Framework framework, Layout& layout) {
  std::vector<std::string> out;
  if (layout.tp == 1 && layout.sequence_parallel) {
    layout.sequence_parallel = false;
    // DeepSpeed and torchtitan have no such option to switch: nothing to report.
    if (framework == Framework::nemo)
      out.push_back("sequence_parallel is switched off at tp 1 (nemo/collections/llm/api.py:1363-1367)");
    else if (framework == Framework::megatron)
      out.push_back("--sequence-parallel is switched off at tp 1 (megatron/training/arguments.py:1433-1439)");
  }
  if (framework == Framework::torchtitan && layout.tp > 1 && !layout.sequence_parallel) {
    layout.sequence_parallel = true;
    out.push_back("torchtitan's tensor parallelism always shards the sequence between blocks (sequence parallel "
                  "on; torchtitan/models/llama3/infra/parallelize.py:apply_tp)");
  }
  if (framework == Framework::nemo && layout.pp == 1 && layout.vpp > 1) {
    layout.vpp = 1;
    out.push_back("virtual_pipeline_model_parallel_size is dropped at pp 1 (nemo/collections/llm/api.py:1369-1381)");
  }
  return out;
}

}  // namespace gpuplan::framework
