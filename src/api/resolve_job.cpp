// The job of a request: training setup, layout, overheads and the usable memory of a GPU.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <string_view>
#include <utility>

#include "api/resolve.hpp"
#include "framework/rules.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"
#include "memory/internal.hpp"
#include "util/choices.hpp"

namespace gpuplan::api::detail {

const std::string& file_text(const FileInput& file, std::string_view field) {
  if (!file.text)
    throw InputError(std::string(field), "'" + file.path + "' (not read)",
                     "a file the front end reads, or its text in the request");
  return *file.text;
}

std::shared_ptr<const HardwareCatalog> resolve_catalog(const std::vector<FileInput>& files, std::string_view field) {
  if (files.empty()) return {std::shared_ptr<void>(), &HardwareCatalog::builtin()};  // the static one, not owned
  auto catalog = std::make_shared<HardwareCatalog>(HardwareCatalog::builtin());
  for (const auto& f : files) catalog->merge_json(file_text(f, field), f.path.empty() ? field : f.path);
  return catalog;
}

namespace {

// "2.11" -> 211: a release as major x 100 + minor.
std::int64_t release(const std::string& given, const char* field, std::int64_t oldest) {
  const std::size_t dot = given.find('.');
  const auto digits = [](std::string_view part) {
    return !part.empty() && part.size() <= 2 &&
           part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const std::string_view text(given);
  if (dot == std::string::npos || !digits(text.substr(0, dot)) || !digits(text.substr(dot + 1)))
    throw InputError(field, "'" + given + "'", "a release as MAJOR.MINOR, e.g. 2.11 or 0.13");
  const std::int64_t version = std::stoll(given.substr(0, dot)) * 100 + std::stoll(given.substr(dot + 1));
  if (version < oldest)
    throw InputError(field, "'" + given + "'", fmt::format("{}.{} or later", oldest / 100, oldest % 100));
  return version;
}

MoeDispatcher moe_dispatcher(const std::string& given) {
  if (const auto* entry = choices::find(choices::kMoeDispatcher, given)) return entry->value;
  throw InputError("training.moe_dispatcher", "'" + given + "'",
                   choices::names(choices::kMoeDispatcher, " or ") +
                       " (Megatron-LM's --moe-token-dispatcher-type; flex runs DeepEP or HybridEP)");
}

}  // namespace

Impl default_impl(Framework framework) {
  // DeepSpeed trains Hugging Face modules (AutoTP splits their Linear weights only): the hf accounting. torchtitan's
  // modules are plain PyTorch, but its tensor parallelism shards as Megatron's does (column/row-wise Linears,
  // the sequence between blocks, the loss over the vocabulary): Megatron-Core's accounting, without Transformer
  // Engine's buffers (stage_params.cpp). NeMo runs Megatron-Core.
  return framework == Framework::deepspeed ? Impl::hf : Impl::megatron;
}

TrainingConfig resolve_training(const TrainingOptions& t) {
  TrainingConfig c;
  c.seq_len = t.seq_len;
  c.micro_batch = t.micro_batch;
  c.global_batch = t.global_batch.value_or(0);
  c.precision = choices::parse(choices::kPrecision, t.precision, "training.precision");
  c.optimizer = choices::parse(choices::kOptimizer, t.optimizer, "training.optimizer");
  if (!t.grad_dtype.empty()) c.grad_dtype = choices::parse(choices::kDType, t.grad_dtype, "training.grad_dtype");
  c.master_weights = t.master_weights;
  c.dropout = t.dropout;
  c.loss = choices::parse(choices::kLoss, t.loss, "training.loss");
  if (t.fused_loss) {
    if (c.loss != Loss::unfused && c.loss != Loss::chunked)
      throw InputError("training.fused_loss", "together with loss '" + t.loss + "'",
                       "one of them: fused_loss is the older name of loss 'chunked'");
    c.loss = Loss::chunked;
  }
  c.vocab_divisible_by = t.vocab_divisible_by.value_or(0);
  c.te_version = release(t.te_version, "training.te_version", 100);
  c.megatron_version = release(t.megatron_version, "training.megatron_version", 1);
  c.grad_nan_check = t.grad_nan_check;
  c.moe_imbalance = t.moe_imbalance;
  c.moe_capacity_factor = t.moe_capacity_factor.value_or(0);
  c.moe_pad_to_capacity = t.moe_pad_to_capacity;
  c.fp8_param_gather = t.fp8_param_gather;
  if (c.fp8_param_gather && c.precision != Precision::fp8)
    throw InputError("training.fp8_param_gather", std::string("with precision ") + to_string(c.precision),
                     "precision fp8 (Transformer Engine makes fp8 parameters only under fp8 training), "
                     "or --no-fp8-param-gather");
  c.moe_dispatcher = moe_dispatcher(t.moe_dispatcher);
  c.compile = t.compile;
  if (c.moe_pad_to_capacity && c.moe_dispatcher == MoeDispatcher::flex)
    throw InputError("training.moe_pad_to_capacity", "with moe_dispatcher flex",
                     "the alltoall dispatcher (Megatron-Core's flex dispatcher does not pad to capacity, "
                     "transformer_config.py)");
  if (c.moe_pad_to_capacity && c.moe_capacity_factor == 0)
    throw InputError("training.moe_pad_to_capacity", "without moe_capacity_factor",
                     "a capacity factor to pad to (Megatron requires --moe-expert-capacity-factor)");
  return c;
}

void apply_zero_buckets(const TrainingOptions& t, Framework framework, Overheads& overheads) {
  const std::pair<const std::optional<double>*, std::string_view> given[] = {
      {&t.reduce_bucket_size, "training.reduce_bucket_size"},
      {&t.allgather_bucket_size, "training.allgather_bucket_size"},
      {&t.stage3_prefetch_bucket_size, "training.stage3_prefetch_bucket_size"},
      {&t.stage3_max_live_parameters, "training.stage3_max_live_parameters"}};
  for (const auto& [value, field] : given)
    if (*value && framework != Framework::deepspeed)
      throw InputError(std::string(field), fmt::format("{:.0f} under framework '{}'", **value, t.framework),
                       "framework deepspeed, whose zero_optimization section has this setting");
  overheads.zero_reduce_bucket_elements = t.reduce_bucket_size.value_or(overheads.zero_reduce_bucket_elements);
  overheads.zero_allgather_bucket_elements =
      t.allgather_bucket_size.value_or(overheads.zero_allgather_bucket_elements);
  overheads.zero3_prefetch_elements = t.stage3_prefetch_bucket_size.value_or(overheads.zero3_prefetch_elements);
  overheads.zero3_max_live_elements = t.stage3_max_live_parameters.value_or(overheads.zero3_max_live_elements);
}

namespace {

// The GPU whose memory `gpuplan memory` checks against when none is named (the gpu option's help says so).
constexpr std::string_view kDefaultGpu = "h100-sxm-80gb";

Layout resolve_layout_options(const LayoutOptions& o) {
  Layout l;
  l.gpus = o.gpus.value_or(0);
  l.tp = o.tp;
  l.pp = o.pp;
  l.vpp = o.vpp;
  l.cp = o.cp;
  l.cp_comm = choices::parse(choices::kCpComm, o.cp_comm_type, "layout.cp_comm_type");
  l.cp_a2a = o.cp_a2a_size.value_or(1);
  l.ep = o.ep;
  l.etp = o.etp.value_or(0);
  l.dp = o.dp.value_or(0);
  l.sequence_parallel = o.sequence_parallel;
  l.zero = static_cast<int>(o.zero.value_or(0));
  l.recompute = choices::parse(choices::kRecompute, o.recompute, "layout.recompute");
  l.recompute_layers = o.recompute_layers.value_or(-1);
  l.offload = choices::parse(choices::kOffload, o.offload, "layout.offload");
  l.offload_target = choices::parse(choices::kOffloadTarget, o.offload_target, "layout.offload_target");
  l.schedule = choices::parse(choices::kPpSchedule, o.pp_schedule, "layout.pp_schedule");
  l.attention = choices::parse(choices::kAttention, o.attention, "layout.attention");
  l.attention_backend = choices::parse(choices::kAttentionBackend, o.attention_backend, "layout.attention_backend");
  if (o.impl) l.impl = choices::parse(choices::kImpl, *o.impl, "layout.impl");
  l.first_stage_layers = o.first_stage_layers.value_or(-1);
  l.last_stage_layers = o.last_stage_layers.value_or(-1);
  return l;
}

bytes_t capacity_of(const HardwareOptions& h, const HardwareCatalog& catalog) {
  if (h.gpu && h.gpu_memory)
    throw InputError("hardware.gpu_memory", *h.gpu_memory, "either gpu or hardware.gpu_memory");
  if (h.gpu_memory) {
    const bytes_t bytes = parse_size(*h.gpu_memory, "hardware.gpu_memory");
    if (bytes <= 0) throw InputError("hardware.gpu_memory", *h.gpu_memory, "a positive size such as 80GiB");
    return bytes;
  }
  return catalog.gpu(h.gpu.value_or(std::string(kDefaultGpu))).usable_memory_bytes;
}

// A node of several hosts (an NVL72 rack: 18 compute trays, each its own operating system with 4 GPUs, 2 Grace
// CPUs, their memory and drives): what offloaded states and launchers see is one host, so the storage is one host's
// share and gpus_per_node counts the GPUs of one host.
void split_among_hosts(const SystemSpec* system, NodeStorage& node) {
  if (system == nullptr || system->hosts_per_node <= 1) return;
  const std::int64_t hosts = system->hosts_per_node;
  if (node.gpus_per_node % hosts != 0) return;
  node.gpus_per_node /= hosts;
  node.host_memory_bytes /= hosts;
  node.nvme_bytes /= hosts;
  node.nvme_read_GBps /= static_cast<double>(hosts);
  node.nvme_write_GBps /= static_cast<double>(hosts);
  node.origin += fmt::format(", one of its {} hosts", hosts);
}

}  // namespace

Overheads resolve_overheads(const HardwareOptions& h) {
  Overheads o = default_overheads();
  if (h.cuda_context) o.cuda_context_bytes = parse_size(*h.cuda_context, "hardware.cuda_context");
  if (h.nccl_per_comm) o.nccl_per_communicator_bytes = parse_size(*h.nccl_per_comm, "hardware.nccl_per_comm");
  if (h.allocator_factor) {
    o.allocator_reserve_factor = *h.allocator_factor;
    o.replay_allocator = false;   // a factor the user gives is the one used
  }
  o.enabled = h.overheads;
  return o;
}

NodeStorage resolve_node_storage(const SystemSpec* system, std::int64_t gpus_per_node, const HardwareOptions& h) {
  NodeStorage node;
  if (system != nullptr && !system->name.empty()) {
    node.gpus_per_node = system->gpus_per_node;
    node.host_memory_bytes = system->host_memory_bytes;
    node.nvme_bytes = system->nvme_bytes;
    node.nvme_read_GBps = system->nvme_read_GBps;
    node.nvme_write_GBps = system->nvme_write_GBps;
    node.origin = system->name;
  }
  if (gpus_per_node > 0) node.gpus_per_node = gpus_per_node;
  split_among_hosts(system, node);
  auto capacity = [&](const std::optional<std::string>& given, std::string_view field, std::string_view option,
                      bytes_t& out) {
    if (!given) return;
    out = parse_size(*given, field);
    if (out <= 0) throw InputError(std::string(field), *given, "a positive size such as 2TB");
    node.origin += fmt::format("{}--{} {}", node.origin.empty() ? "" : ", ", option, *given);
  };
  capacity(h.host_memory, "hardware.host_memory", "host-memory", node.host_memory_bytes);
  capacity(h.nvme_capacity, "hardware.nvme_capacity", "nvme-capacity", node.nvme_bytes);
  if ((h.host_memory || h.nvme_capacity) && node.gpus_per_node <= 0)
    throw InputError("cluster.gpus_per_node", "(none)",
                     "the GPUs per node that share hardware.host_memory or hardware.nvme_capacity, or a "
                     "cluster.system");
  return node;
}

namespace {

// Where pp x vpp does not divide the layers and no split is given: the split Megatron users write for it, lighter
// first and last stages (memory::lighter_ends), said in a note. Without such a split the layout check refuses it.
void choose_pipeline_split(std::int64_t layers, Layout& l, std::vector<std::string>& notes) {
  if (l.pp < 2 || l.first_stage_layers >= 0 || l.last_stage_layers >= 0 || layers % (l.pp * l.vpp) == 0) return;
  const auto [first, last] = memory::lighter_ends(layers, l.pp, l.vpp);
  if (first < 0) return;
  l.first_stage_layers = first;
  l.last_stage_layers = last;
  const std::int64_t middle = (layers - first - last) / (l.pp - 2 > 0 ? l.pp - 2 : 1);
  notes.push_back(fmt::format("pp {} x vpp {} does not divide the {} layers: the first and last stages are "
                              "lighter (--first-stage-layers {} --last-stage-layers {}, {} on each other stage), "
                              "as Megatron-LM's --decoder-first/last-pipeline-num-layers split it",
                              l.pp, l.vpp, layers, first, last, l.pp > 2 ? middle : 0));
}

}  // namespace

void check_expert_degree(const ModelConfig& model, std::string_view field, std::int64_t degree, bool any_value) {
  if (model.is_moe() || (degree == 1 && !any_value)) return;
  throw InputError(std::string(field),
                   fmt::format("{} (needs a mixture-of-experts model; {} is dense)", degree, model.name),
                   any_value ? "no expert tensor-parallel degree for a dense model" : "1 for a dense model");
}

namespace {

// A dense model has no tokens to route: the MoE options change nothing, which the estimate says rather than
// pricing them silently as nothing.
void note_moe_options_unused(const ModelConfig& model, const TrainingConfig& t, std::vector<std::string>& notes) {
  std::vector<std::string> given;
  if (t.moe_capacity_factor > 0) given.emplace_back("moe_capacity_factor");
  if (t.moe_pad_to_capacity) given.emplace_back("moe_pad_to_capacity");
  if (t.moe_dispatcher != MoeDispatcher::alltoall)
    given.emplace_back(std::string("moe_dispatcher ") + to_string(t.moe_dispatcher));
  if (t.moe_imbalance != 1.0) given.emplace_back("moe_imbalance");
  if (given.empty()) return;
  notes.push_back(
      fmt::format("{} is dense (no routed experts): {} change nothing", model.name, fmt::join(given, ", ")));
}

}  // namespace

MemoryInputs resolve_memory_inputs(const ModelSource& model, const ModelOverrides& overrides,
                                   const std::optional<std::string>& params, const TrainingOptions& training,
                                   const LayoutOptions& layout, const HardwareOptions& hardware,
                                   const HardwareCatalog& catalog) {
  MemoryInputs in;
  if (model.given() && params) throw InputError("params", *params, "either model or params, not both");
  if (model.given()) {
    in.model = resolve_model(model, overrides);
    check_expert_degree(*in.model, "layout.ep", layout.ep, false);
    if (layout.etp) check_expert_degree(*in.model, "layout.etp", *layout.etp, false);
  } else if (params) {
    in.params = parse_count(*params, "params");
    if (!(in.params >= 1) || in.params > 1e16) throw InputError("params", *params, "a parameter count from 1 to 1e16");
  } else {
    throw InputError("model", "(none)", "a catalog name, a config.json path, or params N");
  }
  in.training = resolve_training(training);
  if (in.model && !in.model->is_moe()) note_moe_options_unused(*in.model, in.training, in.notes);
  in.layout = resolve_layout_options(layout);
  if (in.model) choose_pipeline_split(in.model->layers, in.layout, in.notes);
  in.overheads = resolve_overheads(hardware);
  in.capacity_bytes = capacity_of(hardware, catalog);
  in.memory_margin = hardware.memory_margin.value_or(kDefaultMemoryMargin);
  if (!hardware.gpu_memory) {
    in.gpu = hardware.gpu.value_or(std::string(kDefaultGpu));
    in.gpu_assumed = !hardware.gpu;
    in.gpu_fp8_any_layout = catalog.gpu(in.gpu).fp8_gemm_any_layout();
  }
  in.layout.framework = choices::parse(choices::kFramework, training.framework, "training.framework");
  if (in.training.fp8_param_gather && !runs_megatron_core(in.layout.framework))
    throw InputError("training.fp8_param_gather", std::string("under framework ") + training.framework,
                     "framework megatron or nemo (Megatron-LM's --fp8-param-gather)");
  if (!layout.impl) in.layout.impl = default_impl(in.layout.framework);
  apply_zero_buckets(training, in.layout.framework, in.overheads);
  // torchtitan shards the states with FSDP2 unless told otherwise (data_parallel_shard_degree -1): ZeRO-3 wherever
  // more than one rank shares a replica's states.
  if (!layout.zero && in.layout.framework == Framework::torchtitan) {
    in.layout.zero = 3;
    const Layout probe = resolve_layout(in);
    if (probe.dp * probe.cp <= 1) in.layout.zero = 0;   // one rank per replica: FSDP2 is not applied
  }
  in.framework_rewrites = framework::apply_rewrites(in.layout.framework, in.layout);
  const Layout resolved = resolve_layout(in);  // reports layout errors before any estimate
  framework::check_job({in.model ? &*in.model : nullptr, &in.training, &resolved});
  return in;
}

}  // namespace gpuplan::api::detail
