// A torchtitan job for a layout: the TOML file of v0.2.2 (the last release with TOML jobs, keys of
// data/frameworks/torchtitan_keys.json) and a launcher that runs it, or at current releases runs the model's config
// function with the same choices as command-line overrides (torchtitan_head's renamed keys).
#include <fmt/format.h>

#include <cctype>

#include "framework/emit_common.hpp"
#include "framework/emitters.hpp"
#include "framework/titan_layer_ac.hpp"
#include "framework/titan_models.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

void refuse_what_torchtitan_cannot_say(const EmitJob& job) {
  const auto refuse = [](const std::string& given, const std::string& accepted) {
    throw InputError("launch.emit", given + " under torchtitan", accepted);
  };
  if (job.gradients() != DType::fp32) refuse("gradients reduced in 16 bits", "mixed_precision_reduce float32 only");
  if (!job.dp_overlap) refuse("data-parallel communication not overlapped", "FSDP2's prefetching, always on");
  if (job.training.precision == Precision::fp16) refuse("fp16", "bf16, fp8 or fp32");
  if (job.training.optimizer != Optimizer::adam && job.training.optimizer != Optimizer::adamw) refuse("an optimizer other than Adam", "adam or adamw");
}

const char* recompute_mode(Recompute recompute) {
  return recompute == Recompute::full ? "full" : recompute == Recompute::selective ? "selective" : "none";
}

// --recompute selective is torchtitan's op-level policy; a full recompute of some of a stage's layers its
// layer-frequency one (framework/titan_layer_ac.hpp), which the rules allow only where a frequency gives that count.
std::string activation_checkpoint(const EmitJob& job) {
  const Layout& l = job.layout;
  const std::int64_t stage_layers = job.model.layers / l.pp;
  if (l.recompute == Recompute::full && l.recompute_layers >= 0 && l.recompute_layers < stage_layers) {
    return fmt::format("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"{}\"\n",
                       titan_checkpoint_frequency(stage_layers, l.recompute_layers));
  }
  std::string out = fmt::format("[activation_checkpoint]\nmode = \"{}\"\n", recompute_mode(l.recompute));
  if (l.recompute == Recompute::selective) out += "selective_ac_option = \"op\"\n";
  return out;
}

std::string parallelism(const EmitJob& job) {
  const Layout& l = job.layout;
  const bool ddp = l.zero == 0;
  std::string out = "[parallelism]\n";
  out += fmt::format("data_parallel_replicate_degree = {}\ndata_parallel_shard_degree = {}\n", ddp ? l.dp : 1, ddp ? 1 : l.dp);
  if (!ddp) out += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", l.zero == 2 ? "never" : "always");
  out += fmt::format("tensor_parallel_degree = {}\n", l.tp);
  if (job.tp_overlap) out += "enable_async_tensor_parallel = true\n";
  out += fmt::format("pipeline_parallel_degree = {}\n", l.pp);
  if (l.pp > 1) {
    out += fmt::format("pipeline_parallel_schedule = \"{}\"\n", l.vpp > 1 ? "Interleaved1F1B" : "1F1B");
    out += fmt::format("pipeline_parallel_microbatch_size = {}\n", job.training.micro_batch);
    out += "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 0\n";
  }
  out += fmt::format("context_parallel_degree = {}\n", l.cp);
  if (l.ep > 1) out += fmt::format("expert_parallel_degree = {}\nexpert_tensor_parallel_degree = {}\n", l.ep, l.etp);
  if (l.ep > 1 && job.training.moe_dispatcher == MoeDispatcher::flex) out += "expert_parallel_comm_backend = \"deepep\"\n";
  return out + "\n";
}

std::string training(const EmitJob& job) {
  const TrainingConfig& t = job.training;
  const Layout& l = job.layout;
  // With pipeline parallelism the local batch is split into microbatches; without, it is the microbatch.
  const std::int64_t local = l.pp > 1 ? t.global_batch / l.dp : t.micro_batch;
  std::string out = "[training]\n";
  out += fmt::format("local_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\n", local, t.global_batch, t.seq_len);
  out += fmt::format("mixed_precision_param = \"{}\"\nmixed_precision_reduce = \"float32\"\n",
                     t.precision == Precision::fp32 ? "float32" : "bfloat16");
  if (!t.master_weights && t.precision != Precision::fp32) out += "dtype = \"bfloat16\"\n";
  if (l.offload != Offload::none) out += "enable_cpu_offload = true\n";
  return out + "max_norm = 1.0\nsteps = 10000\n\n";
}

std::string toml(const EmitJob& job, const TitanFlavor& flavor) {
  std::string out = header(job, "# ");
  out += fmt::format("# NOTE: laid out for {} GPUs; torchrun sets the world size.\n\n", job.layout.gpus);
  out += fmt::format("[job]\ndump_folder = \"./outputs\"\ndescription = \"{} (gpuplan)\"\n\n", job.model_name);
  out += fmt::format("[model]\nname = \"{}\"\nflavor = \"{}\"\n", flavor.name, flavor.flavor);
  if (job.training.precision == Precision::fp8) out += "converters = [\"quantize.linear.float8\"]\n";
  out += fmt::format("\n[optimizer]\nname = \"{}\"\nlr = 3e-4\n\n", job.training.optimizer == Optimizer::adam ? "Adam" : "AdamW");
  out += training(job) + parallelism(job);
  out += activation_checkpoint(job);
  if (runs_compiled(job.training, job.layout, job.tp_overlap)) out += "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n";
  return out;
}

// The same job at current releases: the flavour's config function with the frozen command-line overrides.
std::string head_overrides(const EmitJob& job) {
  const Layout& l = job.layout;
  const TrainingConfig& t = job.training;
  std::string out;
  out += fmt::format(" --parallelism.data_parallel_replicate_degree {}", l.zero == 0 ? l.dp : 1);
  out += fmt::format(" --parallelism.data_parallel_shard_degree {}", l.zero == 0 ? 1 : l.dp);
  out += fmt::format(" --parallelism.tensor_parallel_degree {}", l.tp);
  out += fmt::format(" --parallelism.pipeline_parallel_degree {}", l.pp);
  out += fmt::format(" --parallelism.context_parallel_degree {}", l.cp);
  if (l.ep > 1) out += fmt::format(" --parallelism.expert_parallel_degree {}", l.ep);
  if (l.ep > 1 && job.training.moe_dispatcher == MoeDispatcher::flex)
    out += " --parallelism.expert_parallel_comm_backend deepep";
  if (l.pp > 1) out += fmt::format(" --parallelism.num_pp_microbatches {}", t.global_batch / l.dp / t.micro_batch);
  out += fmt::format(" --training.num_tokens_per_microbatch_per_dp_rank {}", t.micro_batch * t.seq_len);
  out += fmt::format(" --training.num_tokens_per_train_step {}", t.global_batch * t.seq_len);
  out += fmt::format(" --training.max_context_length {}", t.seq_len);
  if (l.offload != Offload::none) out += " --training.enable_cpu_offload";
  if (runs_compiled(t, l, job.tp_overlap)) out += " --compile.enable";
  if (job.tp_overlap) out += " --compile.enable_async_tensor_parallel";
  return out;
}

std::string launcher(const EmitJob& job, const TitanFlavor& flavor) {
  std::string out = "#!/bin/bash\n" + header(job, "# ");
  out += "# Run from a torchtitan checkout on every node, with torchrun's rendezvous set (MASTER_ADDR).\n"
         "# TORCHTITAN_RELEASE=v0.2.2 (default) runs torchtitan.toml; any other value runs the model's config\n"
         "# function with the same choices as overrides (activation checkpointing is chosen in that function).\n\n"
         "set -euo pipefail\n";
  out += fmt::format("export NGPU={}\nexport NNODES=${{NNODES:-{}}}\n", job.gpus_per_node, job.nodes);
  out += "if [ \"${TORCHTITAN_RELEASE:-v0.2.2}\" = v0.2.2 ]; then\n"
         "    CONFIG_FILE=torchtitan.toml ./run_train.sh\nelse\n";
  std::string size(flavor.flavor);   // llama3_8b(), llama3_70b(): the registry's functions are lower case
  for (char& c : size) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out += fmt::format("    MODULE=torchtitan.models.{}.config_registry CONFIG={}_{} ./run_train.sh{}\nfi\n", flavor.name,
                     flavor.name, size, head_overrides(job));
  return out;
}

}  // namespace

std::vector<LaunchFile> emit_torchtitan(const EmitJob& job) {
  const std::optional<TitanFlavor> flavor = titan_flavor_of(job.model_name, job.model);
  if (!flavor)
    throw InputError("launch.emit", "model " + job.model_name + " under torchtitan",
                     "a model torchtitan registers a flavour for: llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, deepseek-v3");
  refuse_what_torchtitan_cannot_say(job);
  return {{"torchtitan.toml", toml(job, *flavor)}, {"train_torchtitan.sh", launcher(job, *flavor)}};
}

}  // namespace gpuplan::framework
