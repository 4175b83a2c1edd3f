#include "choice.hpp"
#include "memory_options.hpp"

#include <fmt/core.h>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::cli {

namespace {


CLI::Option* choice(CLI::App& cmd, const char* flag, std::string& target, const char* choices, const char* help) {
  return cmd.add_option(flag, target, fmt::format("{} ({})", help, choices))->type_name("NAME")->capture_default_str();
}

}  // namespace

void MemoryOptions::add_to(CLI::App& cmd) {
  model.add_to(cmd);
  cmd.add_option("--params", params,
                 "Parameter count instead of a model, e.g. 7e9 or 70B: model states only, activations unknown")
      ->type_name("COUNT");
  const char* training = "Training";
  cmd.add_option("--seq-len", seq_len, "Sequence length (tokens)")->capture_default_str()->group(training);
  cmd.add_option("--micro-batch", micro_batch, "Micro-batch size (sequences per GPU per microbatch)")
      ->capture_default_str()->group(training);
  cmd.add_option("--global-batch", global_batch,
                 "Global batch (sequences per step; default: micro-batch x dp, no gradient accumulation)")
      ->group(training);
  choice(cmd, "--precision", precision, "fp32|fp16|bf16|fp8",
         "Training precision; fp16/bf16/fp8 mean mixed precision with fp32 master weights")->group(training);
  choice(cmd, "--optimizer", optimizer, "adam|adamw|sgd|sgd-momentum|adafactor|adam-8bit", "Optimizer")
      ->group(training);
  choice(cmd, "--grad-dtype", grad_dtype, "fp32|bf16|fp16",
         "Gradient accumulation dtype under mixed precision (fp32 as Megatron-LM's main_grad)")->group(training);
  cmd.add_flag("--no-master-weights", no_master_weights, "No fp32 master copy under mixed precision")->group(training);
  cmd.add_option("--dropout", dropout, "Dropout probability (0 = none, as in most current LLMs)")
      ->capture_default_str()->group(training);
  cmd.add_flag("--fused-loss", fused_loss,
               "Fused/chunked output layer + cross-entropy: logits are never materialized")->group(training);

  const char* layout = "Layout";
  cmd.add_option("--gpus", gpus, "GPUs in all (default: tp x pp x cp x dp)")->group(layout);
  cmd.add_option("--tp", tp, "Tensor-parallel degree")->capture_default_str()->group(layout);
  cmd.add_option("--pp", pp, "Pipeline-parallel degree (stages)")->capture_default_str()->group(layout);
  cmd.add_option("--vpp", vpp, "Virtual pipeline stages (model chunks) per pipeline rank; >1 means interleaved")
      ->capture_default_str()->group(layout);
  cmd.add_option("--cp", cp, "Context-parallel degree (splits the sequence)")->capture_default_str()->group(layout);
  cmd.add_option("--ep", ep, "Expert-parallel degree (MoE)")->capture_default_str()->group(layout);
  cmd.add_option("--etp", etp, "Expert tensor-parallel degree (default: --tp, as Megatron-LM)")->group(layout);
  cmd.add_option("--dp", dp, "Data-parallel degree (default: gpus / (tp x pp x cp))")->group(layout);
  cmd.add_flag("--sequence-parallel", sequence_parallel, "Megatron sequence parallelism with TP")->group(layout);
  cmd.add_option("--zero", zero, "ZeRO stage 0-3 (1 = Megatron distributed optimizer, 3 = FSDP full shard)")
      ->capture_default_str()->group(layout);
  choice(cmd, "--recompute", recompute, "none|selective|full", "Activation recomputation")->group(layout);
  cmd.add_option("--recompute-layers", recompute_layers,
                 "With --recompute full: layers per pipeline stage recomputed (default: all)")->group(layout);
  choice(cmd, "--offload", offload, "none|optimizer|optimizer+params", "ZeRO offload of states")->group(layout);
  choice(cmd, "--offload-target", offload_target, "cpu|nvme", "Where offloaded states go")->group(layout);
  choice(cmd, "--pp-schedule", pp_schedule, "1f1b|interleaved", "Pipeline schedule")->group(layout);
  choice(cmd, "--attention", attention, "eager|flash", "Attention kernel (flash keeps no s x s scores)")
      ->group(layout);
  choice(cmd, "--impl", impl, "megatron|torch-nn|hf",
         "Whose saved tensors to count: Megatron-Core with Transformer Engine, PyTorch nn.TransformerEncoderLayer, "
         "Hugging Face transformers")->group(layout);
  cmd.add_option("--first-stage-layers", first_stage_layers, "Uneven pipeline split: layers on the first stage")
      ->group(layout);
  cmd.add_option("--last-stage-layers", last_stage_layers, "Uneven pipeline split: layers on the last stage")
      ->group(layout);

  const char* hardware = "Hardware and overheads";
  cmd.add_option("--gpu", gpu, "GPU catalog name for usable memory (default: h100-sxm-80gb; see 'gpuplan catalog gpus')")
      ->group(hardware);
  cmd.add_option("--gpu-memory", gpu_memory, "Usable memory per GPU instead of --gpu, e.g. 80GiB or 80GB")
      ->type_name("SIZE")->group(hardware);
  cmd.add_option("--catalog", catalog_files, "Hardware catalog JSON adding or overriding entries (repeatable)")
      ->type_name("FILE")->group(hardware);
  cmd.add_option("--cuda-context", cuda_context, "CUDA context per process (default from data/overheads.json: 1343MB)")
      ->type_name("SIZE")->group(hardware);
  cmd.add_option("--nccl-per-comm", nccl_per_comm, "NCCL buffers per communicator (default: 500MB)")
      ->type_name("SIZE")->group(hardware);
  cmd.add_option("--allocator-factor", allocator_factor,
                 "Caching-allocator reserved/allocated factor (default: 1.064)")->group(hardware);
  cmd.add_flag("--no-overheads", no_overheads, "Pure tensor accounting: no context, NCCL or allocator reserve")
      ->group(hardware);
}

MemoryInputs MemoryOptions::resolve() const {
  MemoryInputs in;
  if (model.has_model() && !params.empty())
    throw InputError("--params", params, "either --model or --params, not both");
  if (model.has_model()) {
    in.model = model.resolve();
  } else if (!params.empty()) {
    in.params = parse_count(params, "--params");
    if (!(in.params >= 1) || in.params > 1e16)
      throw InputError("--params", params, "a parameter count from 1 to 1e16");
  } else {
    throw InputError("--model", "(none)", "a catalog name, a config.json path, or --params N");
  }
  TrainingConfig& t = in.training;
  t.seq_len = seq_len;
  t.micro_batch = micro_batch;
  t.global_batch = global_batch;
  if (global_batch < 0) throw InputError("--global-batch", std::to_string(global_batch), "a positive count");
  t.precision = pick<Precision>("--precision", precision,
                                {{"fp32", Precision::fp32}, {"fp16", Precision::fp16}, {"bf16", Precision::bf16},
                                 {"fp8", Precision::fp8}});
  t.optimizer = pick<Optimizer>("--optimizer", optimizer,
                                {{"adam", Optimizer::adam}, {"adamw", Optimizer::adamw}, {"sgd", Optimizer::sgd},
                                 {"sgd-momentum", Optimizer::sgd_momentum}, {"adafactor", Optimizer::adafactor},
                                 {"adam-8bit", Optimizer::adam_8bit}});
  t.grad_dtype = pick<DType>("--grad-dtype", grad_dtype, {{"fp32", DType::fp32}, {"bf16", DType::bf16}, {"fp16", DType::fp16}});
  t.master_weights = !no_master_weights;
  t.dropout = dropout;
  t.fused_loss = fused_loss;

  Layout& l = in.layout;
  // Given degrees must be positive; the model derives the ones left out.
  for (const auto& [flag, value] : {std::pair{"--gpus", gpus}, {"--dp", dp}, {"--etp", etp}})
    if (value != -1 && value < 1) throw InputError(flag, std::to_string(value), "a positive integer");
  l.gpus = gpus == -1 ? 0 : gpus;
  l.tp = tp;
  l.pp = pp;
  l.vpp = vpp;
  l.cp = cp;
  l.ep = ep;
  l.etp = etp == -1 ? 0 : etp;
  l.dp = dp == -1 ? 0 : dp;
  l.sequence_parallel = sequence_parallel;
  l.zero = zero;
  l.recompute = pick<Recompute>("--recompute", recompute,
                                {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}});
  l.recompute_layers = recompute_layers;
  l.offload = pick<Offload>("--offload", offload,
                            {{"none", Offload::none}, {"optimizer", Offload::optimizer},
                             {"optimizer+params", Offload::optimizer_and_params}});
  l.offload_target = pick<OffloadTarget>("--offload-target", offload_target,
                                         {{"cpu", OffloadTarget::cpu}, {"nvme", OffloadTarget::nvme}});
  l.schedule = pick<PpSchedule>("--pp-schedule", pp_schedule,
                                {{"1f1b", PpSchedule::one_f_one_b}, {"interleaved", PpSchedule::interleaved}});
  l.attention = pick<Attention>("--attention", attention, {{"eager", Attention::eager}, {"flash", Attention::flash}});
  l.impl = pick<Impl>("--impl", impl, {{"megatron", Impl::megatron}, {"torch-nn", Impl::torch_nn}, {"hf", Impl::hf}});
  l.first_stage_layers = first_stage_layers;
  l.last_stage_layers = last_stage_layers;

  in.overheads = default_overheads();
  if (!cuda_context.empty()) in.overheads.cuda_context_bytes = parse_bytes(cuda_context, "--cuda-context");
  if (!nccl_per_comm.empty()) in.overheads.nccl_per_communicator_bytes = parse_bytes(nccl_per_comm, "--nccl-per-comm");
  if (allocator_factor != 0) {
    if (!(allocator_factor >= 1.0 && allocator_factor <= 3.0))
      throw InputError("--allocator-factor", fmt::format("{}", allocator_factor), "a factor from 1.0 to 3.0");
    in.overheads.allocator_reserve_factor = allocator_factor;
  }
  in.overheads.enabled = !no_overheads;

  if (!gpu.empty() && !gpu_memory.empty()) throw InputError("--gpu-memory", gpu_memory, "either --gpu or --gpu-memory");
  if (!gpu_memory.empty()) {
    in.capacity_bytes = parse_bytes(gpu_memory, "--gpu-memory");
    if (in.capacity_bytes <= 0) throw InputError("--gpu-memory", gpu_memory, "a positive size such as 80GiB");
  } else {
    HardwareCatalog catalog = HardwareCatalog::builtin();
    for (const auto& f : catalog_files) catalog.merge_json(read_text_file(f, "--catalog"), f);
    in.capacity_bytes = catalog.gpu(gpu.empty() ? "h100-sxm-80gb" : gpu).usable_memory_bytes;
  }
  resolve_layout(in);  // reports layout errors before any estimate
  return in;
}

}  // namespace gpuplan::cli
