// pretrain_gpt.py's arguments as request options. Defaults and rewrites are Megatron-LM's
// (megatron/training/arguments.py at the commit of data/frameworks/megatron_flags.json).
#include <fmt/format.h>

#include <algorithm>

#include "framework/megatron_args.hpp"
#include "framework/reading.hpp"

namespace gpuplan::framework {

namespace {

using nlohmann::json;

void take_integer(MegatronArgs& args, LaunchConfig& out, json& group, const char* dest, const char* option) {
  const MegatronArg* arg = args.get(dest);
  if (arg == nullptr || arg->value.empty()) return;
  if (const auto number = whole_number(arg->value)) take(out, group, option, *number, args.where(dest));
  else out.errors.push_back(fmt::format("line {}: {} '{}' is not an integer", arg->line, arg->flag, arg->value));
}

bool flag_on(MegatronArgs& args, const char* dest) {
  const MegatronArg* arg = args.get(dest);
  return arg != nullptr && arg->value == "true";
}

// --cp-comm-type: one type, or one per layer (TransformerConfig checks the count); gpuplan prices one for all.
// Megatron's help spells one type "allgather", but it hands the string to Transformer Engine unchanged, which
// accepts only "all_gather" (dot_product_attention/context_parallel.py, attn_forward_func_with_cp).
void read_cp_comm(MegatronArgs& args, LaunchConfig& out) {
  if (const MegatronArg* arg = args.get("cp_comm_type"); arg != nullptr && !arg->items.empty()) {
    const std::string& first = arg->items.front();
    const bool same = std::all_of(arg->items.begin(), arg->items.end(), [&](const auto& t) { return t == first; });
    if (!same)
      out.issues.push_back(args.where("cp_comm_type") + ": a type per layer; gpuplan prices the first, " + first +
                           ", for every layer");
    if (first == "allgather")
      out.issues.push_back(args.where("cp_comm_type") +
                           ": Transformer Engine rejects 'allgather' (it accepts all_gather); read as all_gather");
    take(out, out.layout, "cp_comm_type", first == "allgather" ? std::string("all_gather") : first,
         args.where("cp_comm_type"));
  }
  if (const MegatronArg* arg = args.get("hierarchical_context_parallel_sizes"); arg != nullptr && !arg->items.empty()) {
    if (const auto inner = whole_number(arg->items.front()); inner && arg->items.size() == 2)
      take(out, out.layout, "cp_a2a_size", *inner, args.where("hierarchical_context_parallel_sizes"));
    else
      out.issues.push_back(args.where("hierarchical_context_parallel_sizes") +
                           ": Transformer Engine runs two levels (an all-to-all size and a ring size)");
  }
}

void read_layout(MegatronArgs& args, LaunchConfig& out) {
  take_integer(args, out, out.layout, "tensor_model_parallel_size", "tp");
  take_integer(args, out, out.layout, "pipeline_model_parallel_size", "pp");
  take_integer(args, out, out.layout, "context_parallel_size", "cp");
  read_cp_comm(args, out);
  take_integer(args, out, out.layout, "expert_model_parallel_size", "ep");
  take_integer(args, out, out.layout, "expert_tensor_parallel_size", "etp");
  take_integer(args, out, out.layout, "decoder_first_pipeline_num_layers", "first_stage_layers");
  take_integer(args, out, out.layout, "decoder_last_pipeline_num_layers", "last_stage_layers");
  if (args.has("num_virtual_stages_per_pipeline_rank")) {
    take_integer(args, out, out.layout, "num_virtual_stages_per_pipeline_rank", "vpp");
    take(out, out.layout, "pp_schedule", "interleaved", args.where("num_virtual_stages_per_pipeline_rank"));
  }
  if (const MegatronArg* per_stage = args.get("num_layers_per_virtual_pipeline_stage")) {
    const auto layers = whole_number(args.has("num_layers") ? args.get("num_layers")->value : "");
    const auto chunk = whole_number(per_stage->value);
    const std::int64_t pp = out.layout.value("pp", std::int64_t{1});
    if (layers && chunk && sane_count(*chunk, 1'000'000) && sane_count(pp, 65536) && *layers % (pp * *chunk) == 0) {
      take(out, out.layout, "vpp", *layers / pp / *chunk, args.where("num_layers_per_virtual_pipeline_stage"));
      take(out, out.layout, "pp_schedule", "interleaved", args.where("num_layers_per_virtual_pipeline_stage"));
    } else {
      out.issues.push_back(args.where("num_layers_per_virtual_pipeline_stage") +
                           ": the layers per stage are not divisible by it (arguments.py:951-976)");
    }
  }
  // Taken as given: at tp 1 Megatron-LM switches it off, a rewrite the result reports (and --tp 2 keeps it).
  if (flag_on(args, "sequence_parallel")) take(out, out.layout, "sequence_parallel", true, args.where("sequence_parallel"));
}

void read_batch_and_precision(MegatronArgs& args, LaunchConfig& out) {
  take_integer(args, out, out.training, "seq_length", "seq_len");
  take_integer(args, out, out.training, "micro_batch_size", "micro_batch");
  take_integer(args, out, out.training, "global_batch_size", "global_batch");
  if (args.has("step_batch_size_schedule") && args.has("global_batch_size"))
    out.errors.push_back(fmt::format("{} together with {}: Megatron-LM raises ValueError "
                                     "(megatron/training/arguments.py:698-701)",
                                     args.where("global_batch_size"), args.where("step_batch_size_schedule")));
  if (args.has("step_batch_size_schedule") || args.has("rampup_batch_size"))
    out.not_understood.push_back("a batch-size ramp (--step-batch-size-schedule / --rampup-batch-size): gpuplan "
                                 "prices the final global batch");
  const bool bf16 = flag_on(args, "bf16"), fp16 = flag_on(args, "fp16");
  if (bf16 && fp16)
    out.errors.push_back(fmt::format("{} and {}: mutually exclusive (megatron/training/arguments.py:1193-1216)",
                                     args.where("fp16"), args.where("bf16")));
  const char* precision = args.has("fp8") ? "fp8" : bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
  take(out, out.training, "precision", precision,
       args.has("fp8") ? args.where("fp8") : bf16 ? args.where("bf16") : fp16 ? args.where("fp16") : "no --bf16/--fp16");
  if (flag_on(args, "fp8_param_gather")) {
    if (args.has("fp8")) take(out, out.training, "fp8_param_gather", true, args.where("fp8_param_gather"));
    else out.not_understood.push_back(args.where("fp8_param_gather") + " without --fp8-format (no fp8 training)");
  }
  // bf16 reduces gradients in fp32 unless --grad-reduce-in-bf16 (arguments.py:1193-1216).
  if (flag_on(args, "grad_reduce_in_bf16")) take(out, out.training, "grad_dtype", "bf16", args.where("grad_reduce_in_bf16"));
  if (const MegatronArg* grads = args.get("main_grads_dtype"))
    take(out, out.training, "grad_dtype", grads->value == "bf16" ? "bf16" : "fp32", args.where("main_grads_dtype"));
  if (flag_on(args, "cross_entropy_loss_fusion")) {
    const MegatronArg* impl = args.get("cross_entropy_fusion_impl");
    take(out, out.training, "loss", impl != nullptr && impl->value == "te" ? "fused-te" : "fused-native",
         args.where("cross_entropy_loss_fusion"));
  }
  take_integer(args, out, out.training, "make_vocab_size_divisible_by", "make_vocab_size_divisible_by");
  if (const MegatronArg* optimizer = args.get("optimizer")) {
    if (optimizer->value == "adam" || optimizer->value == "sgd") take(out, out.training, "optimizer", optimizer->value, args.where("optimizer"));
    else out.not_understood.push_back(args.where("optimizer") + " (gpuplan models Adam and SGD states)");
  }
  if (const MegatronArg* factor = args.get("moe_expert_capacity_factor"))
    take(out, out.training, "moe_capacity_factor", json::parse(factor->value, nullptr, false), args.where("moe_expert_capacity_factor"));
  if (flag_on(args, "moe_pad_expert_input_to_capacity"))
    take(out, out.training, "moe_pad_to_capacity", true, args.where("moe_pad_expert_input_to_capacity"));
  // On by default (arguments.py: --no-check-for-nan-in-loss-and-grad, store_false).
  const MegatronArg* nan_check = args.get("check_for_nan_in_loss_and_grad");
  if (nan_check != nullptr && nan_check->value == "false")
    take(out, out.training, "grad_nan_check", false, args.where("check_for_nan_in_loss_and_grad"));
}

// The token dispatcher: alltoall and flex (DeepEP or HybridEP, --moe-flex-dispatcher-backend; older releases'
// --moe-enable-deepep turned it on with flex) are priced; allgather is priced as alltoall.
void read_moe_dispatcher(MegatronArgs& args, LaunchConfig& out) {
  const MegatronArg* dispatcher = args.get("moe_token_dispatcher_type");
  if (dispatcher != nullptr) take_moe_dispatcher(out, dispatcher->value, args.where("moe_token_dispatcher_type"));
  if (flag_on(args, "moe_enable_deepep") && (dispatcher == nullptr || dispatcher->value != "flex"))
    out.issues.push_back(args.where("moe_enable_deepep") +
                         " needs --moe-token-dispatcher-type flex (megatron/core/transformer/transformer_config.py "
                         "raises otherwise)");
}

void read_recompute(MegatronArgs& args, LaunchConfig& out) {
  if (flag_on(args, "recompute_activations"))
    take(out, out.layout, "recompute", "selective", args.where("recompute_activations") + " (rewritten to selective)");
  const MegatronArg* granularity = args.get("recompute_granularity");
  if (granularity == nullptr) return;
  take(out, out.layout, "recompute", granularity->value, args.where("recompute_granularity"));
  if (granularity->value != "full") return;
  const MegatronArg* method = args.get("recompute_method");
  const MegatronArg* layers = args.get("recompute_num_layers");
  if (method == nullptr || layers == nullptr) {
    out.issues.push_back("full recompute requires --recompute-method and --recompute-num-layers "
                         "(transformer_config.py:1904-1933)");
    return;
  }
  if (method->value == "block") take_integer(args, out, out.layout, "recompute_num_layers", "recompute_layers");
  else out.understood.push_back(args.where("recompute_method") + " -> every layer recomputed, in groups");
}

void read_states(MegatronArgs& args, LaunchConfig& out) {
  std::int64_t zero = flag_on(args, "use_distributed_optimizer") ? 1 : 0;
  std::string from = zero == 1 ? args.where("use_distributed_optimizer") : "no --use-distributed-optimizer";
  if (flag_on(args, "use_megatron_fsdp")) {
    const MegatronArg* strategy = args.get("data_parallel_sharding_strategy");
    const std::string name = strategy != nullptr ? strategy->value : "no_shard";
    zero = name == "optim_grads_params" ? 3 : name == "optim_grads" ? 2 : name == "optim" ? 1 : 0;
    from = args.where("use_megatron_fsdp") + ", sharding " + name;
  } else if (flag_on(args, "use_torch_fsdp2")) {
    zero = 3;
    from = args.where("use_torch_fsdp2");
  }
  take(out, out.layout, "zero", zero, from);
  if (flag_on(args, "optimizer_cpu_offload")) {
    take(out, out.layout, "offload", "optimizer", args.where("optimizer_cpu_offload"));
    take(out, out.layout, "offload_target", "cpu", args.where("optimizer_cpu_offload"));
    if (!flag_on(args, "use_precision_aware_optimizer"))
      out.issues.push_back("--optimizer-cpu-offload requires --use-precision-aware-optimizer (arguments.py:1884-1894)");
  }
  // Megatron's default does not overlap the gradient reduce with backward (--overlap-grad-reduce turns it on).
  if (!flag_on(args, "overlap_grad_reduce"))
    take(out, out.timing, "no_dp_overlap", true, "no --overlap-grad-reduce (Megatron's default)");
  else
    out.understood.push_back(args.where("overlap_grad_reduce") + " -> gradient reduce overlapped");
  if (flag_on(args, "overlap_param_gather") && (!flag_on(args, "overlap_grad_reduce") || zero == 0))
    out.issues.push_back("--overlap-param-gather requires --overlap-grad-reduce and the distributed optimizer "
                         "(arguments.py:1024-1030)");
  // With virtual stages Megatron overlaps the pipeline's sends and receives with compute unless told not to
  // (overlap_p2p_comm defaults to True, forced False without interleaving).
  if (const MegatronArg* p2p = args.get("overlap_p2p_comm"); p2p != nullptr && p2p->value == "false")
    take(out, out.timing, "no_pp_overlap", true, args.where("overlap_p2p_comm"));
  if (flag_on(args, "tp_comm_overlap")) {
    take(out, out.timing, "tp_overlap", true, args.where("tp_comm_overlap"));
    if (!flag_on(args, "sequence_parallel"))
      out.issues.push_back("--tp-comm-overlap requires --sequence-parallel (arguments.py:1441-1442)");
  }
  read_moe_dispatcher(args, out);
  if (const MegatronArg* backend = args.get("attention_backend"))
    take_attention_backend(out, backend->value, args.where("attention_backend"));
}

}  // namespace

void read_megatron_model(MegatronArgs& args, const std::string& origin, LaunchConfig& out);

void convert_megatron_args(MegatronArgs& args, const std::string& origin, LaunchConfig& out) {
  read_layout(args, out);
  read_batch_and_precision(args, out);
  read_recompute(args, out);
  read_states(args, out);
  read_megatron_model(args, origin, out);
  for (const MegatronArg* arg : args.unread_relevant()) {
    const std::string place = arg->line > 0 ? fmt::format("line {}: ", arg->line) : std::string();
    const bool bare = arg->value == "true" || arg->value == "false";
    out.not_understood.push_back(place + arg->flag + (bare ? "" : " " + arg->value) + " (not modelled)");
  }
}

}  // namespace gpuplan::framework
