// A NeMo 2.0 launch for a layout: `nemo llm pretrain --factory RECIPE` with every layout, precision, recompute,
// optimizer and batch choice as a recipe attribute override (data/frameworks/nemo_keys.json).
#include <fmt/format.h>

#include "framework/emit_common.hpp"
#include "framework/emitters.hpp"
#include "framework/nemo_values.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

using Overrides = std::vector<std::pair<std::string, std::string>>;

const char* python_bool(bool value) { return value ? "True" : "False"; }

const char* torch_dtype(Precision precision) {
  return precision == Precision::fp16 ? "torch.float16" : precision == Precision::fp32 ? "torch.float32" : "torch.bfloat16";
}

void strategy(const EmitJob& job, Overrides& o) {
  const Layout& l = job.layout;
  const std::string s = "trainer.strategy.";
  o.emplace_back(s + "tensor_model_parallel_size", std::to_string(l.tp));
  o.emplace_back(s + "pipeline_model_parallel_size", std::to_string(l.pp));
  if (l.pp > 1) o.emplace_back(s + "pipeline_dtype", torch_dtype(job.training.precision));
  o.emplace_back(s + "virtual_pipeline_model_parallel_size", l.vpp > 1 ? std::to_string(l.vpp) : "None");
  if (l.first_stage_layers >= 0) o.emplace_back(s + "num_layers_in_first_pipeline_stage", std::to_string(l.first_stage_layers));
  if (l.last_stage_layers >= 0) o.emplace_back(s + "num_layers_in_last_pipeline_stage", std::to_string(l.last_stage_layers));
  o.emplace_back(s + "context_parallel_size", std::to_string(l.cp));
  if (l.cp > 1 && l.cp_comm != CpComm::p2p) o.emplace_back("model.config.cp_comm_type", to_string(l.cp_comm));
  if (l.cp_comm == CpComm::a2a_p2p)
    o.emplace_back("model.config.hierarchical_context_parallel_sizes", fmt::format("[{},{}]", l.cp_a2a, l.cp / l.cp_a2a));
  o.emplace_back(s + "sequence_parallel", python_bool(l.sequence_parallel));
  if (job.model.is_moe()) {
    o.emplace_back(s + "expert_model_parallel_size", std::to_string(l.ep));
    o.emplace_back(s + "expert_tensor_parallel_size", std::to_string(l.etp));
  }
  o.emplace_back(s + "ddp.grad_reduce_in_fp32", python_bool(job.gradients() == DType::fp32));
  o.emplace_back(s + "ddp.overlap_grad_reduce", python_bool(job.dp_overlap));
  o.emplace_back(s + "ddp.overlap_param_gather", python_bool(job.dp_overlap && l.zero >= 1));
  if (l.zero >= 2) {
    o.emplace_back(s + "fsdp", "megatron");
    o.emplace_back(s + "ddp.use_megatron_fsdp", "True");
    o.emplace_back(s + "ddp.data_parallel_sharding_strategy", l.zero == 3 ? "optim_grads_params" : "optim_grads");
  }
}

void model_and_optimizer(const EmitJob& job, Overrides& o) {
  const Layout& l = job.layout;
  o.emplace_back("optim.config.use_distributed_optimizer", python_bool(l.zero >= 1));
  o.emplace_back("optim.config.optimizer", job.training.optimizer == Optimizer::sgd ? "sgd" : "adam");
  if (l.offload == Offload::optimizer) {
    o.emplace_back("optim.config.optimizer_cpu_offload", "True");
    o.emplace_back("optim.config.use_precision_aware_optimizer", "True");
    o.emplace_back("optim.config.optimizer_offload_fraction", "1.0");
  }
  if (l.recompute != Recompute::none) {
    o.emplace_back("model.config.recompute_granularity", l.recompute == Recompute::full ? "full" : "selective");
    if (l.recompute == Recompute::full) {
      o.emplace_back("model.config.recompute_method", l.recompute_layers >= 0 ? "block" : "uniform");
      o.emplace_back("model.config.recompute_num_layers", std::to_string(l.recompute_layers >= 0 ? l.recompute_layers : 1));
    }
  }
  o.emplace_back("model.config.cross_entropy_loss_fusion", python_bool(job.training.loss == Loss::fused_native));
  o.emplace_back("model.config.attention_backend", megatron_attention_backend(l));
  if (job.training.moe_capacity_factor > 0)
    o.emplace_back("model.config.moe_expert_capacity_factor", fmt::format("{}", job.training.moe_capacity_factor));
  if (job.training.moe_dispatcher == MoeDispatcher::flex)
    o.emplace_back("model.config.moe_token_dispatcher_type", "flex");
  if (job.tp_overlap) o.emplace_back("trainer.callbacks[MegatronCommOverlapCallback].tp_comm_overlap", "True");
  if (job.layout.vpp > 1 && !job.pp_overlap)
    o.emplace_back("trainer.callbacks[MegatronCommOverlapCallback].overlap_p2p_comm", "False");
}

void training(const EmitJob& job, Overrides& o) {
  const TrainingConfig& t = job.training;
  o.emplace_back("trainer.num_nodes", std::to_string(job.nodes));
  o.emplace_back("trainer.devices", std::to_string(job.gpus_per_node));
  o.emplace_back("trainer.plugins.precision", t.precision == Precision::fp16 ? "16-mixed" : t.precision == Precision::fp32 ? "32" : "bf16-mixed");
  if (t.precision == Precision::fp8) o.emplace_back("trainer.plugins.fp8", "hybrid");
  if (t.fp8_param_gather) o.emplace_back("trainer.plugins.fp8_param_gather", "True");
  o.emplace_back("data.seq_length", std::to_string(t.seq_len));
  o.emplace_back("data.micro_batch_size", std::to_string(t.micro_batch));
  o.emplace_back("data.global_batch_size", std::to_string(t.global_batch));
}

void refuse_what_nemo_cannot_say(const EmitJob& job) {
  const TrainingConfig& t = job.training;
  const auto refuse = [](const std::string& given, const std::string& accepted) {
    throw InputError("launch.emit", given + " under NeMo", accepted);
  };
  if (t.loss == Loss::fused_te || t.loss == Loss::chunked) refuse("loss " + std::string(t.loss == Loss::fused_te ? "fused-te" : "chunked"), "unfused or fused-native");
  if (job.gradients() == DType::fp16) refuse("fp16 gradients", "grad_dtype fp32 or bf16");
  if (!t.master_weights && t.precision != Precision::fp32) refuse("no fp32 master weights", "master weights kept");
  if (t.optimizer != Optimizer::adam && t.optimizer != Optimizer::adamw && t.optimizer != Optimizer::sgd)
    refuse("an optimizer NeMo's recipes do not name", "adam, adamw or sgd");
}

}  // namespace

std::vector<LaunchFile> emit_nemo(const EmitJob& job) {
  const std::optional<std::string> factory = nemo_factory_of(job.model_name, job.model);
  if (!factory)
    throw InputError("launch.emit", "model " + job.model_name + " under NeMo",
                     "a model with a built-in NeMo recipe: llama-3.1-8b, llama-3.1-70b, mixtral-8x7b");
  refuse_what_nemo_cannot_say(job);
  Overrides overrides;
  training(job, overrides);
  strategy(job, overrides);
  model_and_optimizer(job, overrides);
  std::string text = "#!/bin/bash\n" + header(job, "# ");
  text += "# Every choice is an override of the recipe's defaults; run where NeMo and nemo-run are installed.\n\n"
          "set -euo pipefail\n\n";
  text += "nemo llm pretrain --factory " + *factory + " -y";
  for (const auto& [key, value] : overrides) text += " \\\n    " + shell_word(key + "=" + value);
  return {{"train_nemo.sh", text + "\n"}};
}

}  // namespace gpuplan::framework
