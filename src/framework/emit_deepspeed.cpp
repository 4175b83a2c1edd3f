// A DeepSpeed ds_config.json for a layout, and the deepspeed launcher line of a Hugging Face Trainer script.
// Every key is one of DeepSpeed's (data/frameworks/deepspeed_keys.json); tensor, pipeline and expert parallelism
// are AutoTP's tensor_parallel.autotp_size, the pipeline engine's pipeline.stages and AutoEP's
// expert_parallel.autoep_size. DeepSpeed reads the file with hjson, so the header is a comment.
#include <fmt/format.h>

#include "framework/emit_common.hpp"
#include "framework/emitters.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

using nlohmann::ordered_json;

ordered_json offload_device(const EmitJob& job) {
  ordered_json device = {{"device", job.layout.offload_target == OffloadTarget::nvme ? "nvme" : "cpu"}, {"pin_memory", true}};
  if (job.layout.offload_target == OffloadTarget::nvme) device["nvme_path"] = "/local_nvme";
  return device;
}

ordered_json zero_section(const EmitJob& job) {
  const Layout& l = job.layout;
  ordered_json zero = {{"stage", l.zero}, {"overlap_comm", job.dp_overlap}, {"contiguous_gradients", true}};
  if (l.offload != Offload::none) zero["offload_optimizer"] = offload_device(job);
  if (l.offload == Offload::optimizer_and_params) zero["offload_param"] = offload_device(job);
  // Bucket sizes the job was priced with, where they are not DeepSpeed's defaults.
  const Overheads& given = job.overheads;
  const Overheads defaults = default_overheads();
  const auto size = [&zero](const char* key, double value, double fallback) {
    if (value > 0 && value != fallback) zero[key] = static_cast<std::int64_t>(value);
  };
  size("reduce_bucket_size", given.zero_reduce_bucket_elements, defaults.zero_reduce_bucket_elements);
  size("allgather_bucket_size", given.zero_allgather_bucket_elements, defaults.zero_allgather_bucket_elements);
  size("stage3_prefetch_bucket_size", given.zero3_prefetch_elements, defaults.zero3_prefetch_elements);
  size("stage3_max_live_parameters", given.zero3_max_live_elements, defaults.zero3_max_live_elements);
  return zero;
}

ordered_json config(const EmitJob& job) {
  const Layout& l = job.layout;
  const TrainingConfig& t = job.training;
  const std::int64_t accumulation = t.global_batch / (t.micro_batch * l.dp);
  ordered_json c = {{"train_batch_size", t.global_batch},
                    {"train_micro_batch_size_per_gpu", t.micro_batch},
                    {"gradient_accumulation_steps", accumulation}};
  if (t.precision == Precision::bf16) c["bf16"] = {{"enabled", true}};
  if (t.precision == Precision::fp16) c["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  c["zero_optimization"] = zero_section(job);
  const DType grads = job.gradients();
  c["data_types"] = {{"grad_accum_dtype", grads == DType::bf16 ? "bf16" : grads == DType::fp16 ? "fp16" : "fp32"}};
  c["gradient_clipping"] = 1.0;
  if (l.tp > 1) c["tensor_parallel"] = {{"autotp_size", l.tp}, {"tp_overlap_comm", job.tp_overlap}};
  if (l.pp > 1) c["pipeline"] = {{"stages", l.pp}, {"partition", "uniform"}};
  if (l.ep > 1) c["expert_parallel"] = {{"enabled", true}, {"autoep_size", l.ep}, {"expert_tensor_parallel_size", 1}};
  if (l.recompute == Recompute::full) {
    ordered_json checkpointing = {{"partition_activations", false}, {"contiguous_memory_optimization", false}};
    if (l.recompute_layers >= 0) checkpointing["number_checkpoints"] = l.recompute_layers;
    c["activation_checkpointing"] = checkpointing;
  }
  const bool sgd = t.optimizer == Optimizer::sgd || t.optimizer == Optimizer::sgd_momentum;
  c["optimizer"] = {{"type", sgd ? "SGD" : t.optimizer == Optimizer::adam ? "Adam" : "AdamW"},
                    {"params", sgd ? ordered_json{{"lr", 3e-4}} : ordered_json{{"lr", 3e-4}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}};
  c["steps_per_print"] = 10;
  return c;
}

void check_expressible(const EmitJob& job) {
  const TrainingConfig& t = job.training;
  if (t.precision == Precision::fp8)
    throw InputError("launch.emit", "fp8 (ds_config has no FP8 training section)", "precision bf16, fp16 or fp32");
  if (t.optimizer == Optimizer::adafactor || t.optimizer == Optimizer::adam_8bit)
    throw InputError("launch.emit", "an optimizer DeepSpeed's config does not name", "adam, adamw or sgd");
}

}  // namespace

std::vector<LaunchFile> emit_deepspeed(const EmitJob& job) {
  check_expressible(job);
  const std::string json_text = header(job, "// ") + config(job).dump(2) + "\n";
  const Layout& l = job.layout;
  std::string script = "#!/bin/bash\n" + header(job, "# ");
  script += "# train.py is your Hugging Face Trainer script; ds_config.json beside this file holds the batch, ZeRO,\n"
            "# offload and precision, and the tensor, pipeline and expert parallel sizes (AutoTP, pipeline engine,\n"
            "# AutoEP). List the nodes in hostfile (one line per node: host slots=" +
            std::to_string(job.gpus_per_node) + ").\n\nset -euo pipefail\n\n";
  script += fmt::format("deepspeed --hostfile hostfile --num_nodes {} --num_gpus {} train.py \\\n", job.nodes, job.gpus_per_node);
  script += "    --deepspeed ds_config.json \\\n";
  script += fmt::format("    --per_device_train_batch_size {} --gradient_accumulation_steps {} \\\n", job.training.micro_batch,
                        job.training.global_batch / (job.training.micro_batch * l.dp));
  script += fmt::format("    --max_seq_length {}", job.training.seq_len);
  if (job.training.precision == Precision::bf16) script += " --bf16";
  if (job.training.precision == Precision::fp16) script += " --fp16";
  if (l.recompute == Recompute::full) script += " --gradient_checkpointing";
  if (job.training.compile) script += " --torch_compile";   // TrainingArguments.torch_compile
  script += "\n";
  return {{"ds_config.json", json_text}, {"train_deepspeed.sh", script}};
}

}  // namespace gpuplan::framework
