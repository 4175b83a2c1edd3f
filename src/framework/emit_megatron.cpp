// A Megatron-LM launch script (torchrun ... pretrain_gpt.py) for a layout: every layout, precision, recompute,
// overlap, distributed-optimizer and batch flag, each one an argument of pretrain_gpt.py at the release of
// release_of(Framework::megatron). Paths and the tokenizer are variables the user sets.
#include <fmt/format.h>

#include "framework/emit_common.hpp"
#include "framework/emitters.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;

Flags parallel_flags(const EmitJob& job) {
  const Layout& l = job.layout;
  Flags f;
  f.emplace_back("--tensor-model-parallel-size", std::to_string(l.tp));
  f.emplace_back("--pipeline-model-parallel-size", std::to_string(l.pp));
  if (l.vpp > 1) f.emplace_back("--num-virtual-stages-per-pipeline-rank", std::to_string(l.vpp));
  if (l.vpp > 1 && !job.pp_overlap) f.emplace_back("--no-overlap-p2p-communication", "");
  if (l.first_stage_layers >= 0) f.emplace_back("--decoder-first-pipeline-num-layers", std::to_string(l.first_stage_layers));
  if (l.last_stage_layers >= 0) f.emplace_back("--decoder-last-pipeline-num-layers", std::to_string(l.last_stage_layers));
  f.emplace_back("--context-parallel-size", std::to_string(l.cp));
  if (l.cp > 1 && l.cp_comm != CpComm::p2p) f.emplace_back("--cp-comm-type", to_string(l.cp_comm));
  if (l.cp_comm == CpComm::a2a_p2p)   // two integers: the all-to-all groups, then the ring across them
    f.emplace_back("--hierarchical-context-parallel-sizes", fmt::format("{} {}", l.cp_a2a, l.cp / l.cp_a2a));
  if (job.model.is_moe()) {
    f.emplace_back("--expert-model-parallel-size", std::to_string(l.ep));
    f.emplace_back("--expert-tensor-parallel-size", std::to_string(l.etp));
  }
  if (l.sequence_parallel) f.emplace_back("--sequence-parallel", "");
  if (job.tp_overlap) f.emplace_back("--tp-comm-overlap", "");
  return f;
}

Flags state_flags(const EmitJob& job) {
  const Layout& l = job.layout;
  Flags f;
  if (l.zero == 1) f.emplace_back("--use-distributed-optimizer", "");
  if (l.zero >= 2) {   // Megatron-FSDP (v1 turns the distributed optimizer on itself)
    f.emplace_back("--use-megatron-fsdp", "");
    f.emplace_back("--data-parallel-sharding-strategy", l.zero == 3 ? "optim_grads_params" : "optim_grads");
    f.emplace_back("--use-distributed-optimizer", "");
    f.emplace_back("--ckpt-format", "fsdp_dtensor");
    f.emplace_back("--no-gradient-accumulation-fusion", "");
  }
  if (l.offload == Offload::optimizer) {
    f.emplace_back("--optimizer-cpu-offload", "");
    f.emplace_back("--use-precision-aware-optimizer", "");
    f.emplace_back("--optimizer-offload-fraction", "1.0");
  }
  if (job.dp_overlap) {
    f.emplace_back("--overlap-grad-reduce", "");
    if (l.zero >= 1) f.emplace_back("--overlap-param-gather", "");
  }
  if (l.recompute == Recompute::selective) {
    f.emplace_back("--recompute-granularity", "selective");
  } else if (l.recompute == Recompute::full) {
    f.emplace_back("--recompute-granularity", "full");
    // uniform with 1 layer per chunk recomputes every layer; block N recomputes the first N of each stage.
    f.emplace_back("--recompute-method", l.recompute_layers >= 0 ? "block" : "uniform");
    f.emplace_back("--recompute-num-layers", std::to_string(l.recompute_layers >= 0 ? l.recompute_layers : 1));
  }
  return f;
}

Flags training_flags(const EmitJob& job) {
  const TrainingConfig& t = job.training;
  Flags f;
  f.emplace_back("--seq-length", std::to_string(t.seq_len));
  f.emplace_back("--micro-batch-size", std::to_string(t.micro_batch));
  f.emplace_back("--global-batch-size", std::to_string(t.global_batch));
  if (t.precision == Precision::fp16) f.emplace_back("--fp16", "");
  if (t.precision == Precision::bf16 || t.precision == Precision::fp8) f.emplace_back("--bf16", "");
  if (t.precision == Precision::fp8) f.emplace_back("--fp8-format", "hybrid");
  if (t.fp8_param_gather) f.emplace_back("--fp8-param-gather", "");
  if (job.gradients() == DType::bf16) f.emplace_back("--grad-reduce-in-bf16", "");
  if (t.loss == Loss::fused_native || t.loss == Loss::fused_te) {
    f.emplace_back("--cross-entropy-loss-fusion", "");
    f.emplace_back("--cross-entropy-fusion-impl", t.loss == Loss::fused_te ? "te" : "native");
  }
  f.emplace_back("--make-vocab-size-divisible-by", std::to_string(t.vocab_divisible_by > 0 ? t.vocab_divisible_by : 128));
  if (!t.grad_nan_check) f.emplace_back("--no-check-for-nan-in-loss-and-grad", "");
  f.emplace_back("--optimizer", t.optimizer == Optimizer::sgd || t.optimizer == Optimizer::sgd_momentum ? "sgd" : "adam");
  f.emplace_back("--attention-backend", megatron_attention_backend(job.layout));
  // Schedule and data: edit to taste; they do not change memory or step time.
  f.emplace_back("--train-iters", "${TRAIN_ITERS}");
  f.emplace_back("--lr", "3.0e-4");
  f.emplace_back("--min-lr", "3.0e-5");
  f.emplace_back("--lr-decay-style", "cosine");
  f.emplace_back("--lr-warmup-iters", "2000");
  f.emplace_back("--weight-decay", "0.1");
  f.emplace_back("--clip-grad", "1.0");
  return f;
}

// Megatron-LM keeps fp32 main parameters and grads; what its flags cannot state is refused rather than dropped.
void check_expressible(const EmitJob& job) {
  const TrainingConfig& t = job.training;
  const auto refuse = [](const std::string& given, const std::string& accepted) {
    throw InputError("launch.emit", given + " (Megatron-LM has no flag for it)", accepted);
  };
  if (!t.master_weights && t.precision != Precision::fp32) refuse("no fp32 master weights", "master weights kept");
  if (job.gradients() == DType::fp16) refuse("fp16 gradients", "grad_dtype fp32 or bf16");
  if (t.optimizer == Optimizer::adafactor || t.optimizer == Optimizer::adam_8bit)
    refuse(std::string("optimizer ") + (t.optimizer == Optimizer::adafactor ? "adafactor" : "adam-8bit"), "adam, adamw or sgd");
  if (t.loss == Loss::chunked) refuse("loss chunked", "unfused, fused-native or fused-te");
}

// NAME=( one flag and its value per line ); a value that names a variable is quoted so it stays one word.
std::string array(const char* name, const Flags& flags) {
  std::string out = fmt::format("{}=(\n", name);
  for (const auto& [flag, value] : flags) {
    if (value.empty()) out += fmt::format("    {}\n", flag);
    else if (value.rfind("${", 0) == 0) out += fmt::format("    {} \"{}\"\n", flag, value);
    else if (value.find_first_not_of("0123456789 ") == std::string::npos) out += fmt::format("    {} {}\n", flag, value);
    else out += fmt::format("    {} {}\n", flag, shell_word(value));
  }
  out += ")\n\n";
  return out;
}

}  // namespace

std::vector<LaunchFile> emit_megatron(const EmitJob& job) {
  check_expressible(job);
  std::string text = "#!/bin/bash\n" + header(job, "# ");
  text += "# Set DATA_PATH (a tokenized prefix, or leave it for mock data) and TOKENIZER_MODEL; run on every node\n"
          "# with NODE_RANK and MASTER_ADDR set, from the root of a Megatron-LM checkout.\n\n";
  text += "set -euo pipefail\n";
  // Megatron-FSDP must not run with one connection; TP and CP need it on GPUs before Blackwell.
  if (job.layout.zero < 2) text += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  text += fmt::format("\nGPUS_PER_NODE={}\nNUM_NODES=${{NUM_NODES:-{}}}\n", job.gpus_per_node, job.nodes);
  text += "NODE_RANK=${NODE_RANK:-0}\nMASTER_ADDR=${MASTER_ADDR:-localhost}\nMASTER_PORT=${MASTER_PORT:-29500}\n";
  text += "TRAIN_ITERS=${TRAIN_ITERS:-500000}\n";
  text += "TOKENIZER_MODEL=${TOKENIZER_MODEL:-}   # a Hugging Face tokenizer, e.g. the model's repository\n";
  text += "DATA_PATH=${DATA_PATH:-}             # empty: mock data with the model's vocabulary\n\n";
  text += array("MODEL_ARGS", megatron_model_flags(job));
  text += array("PARALLEL_ARGS", parallel_flags(job));
  text += array("STATE_ARGS", state_flags(job));
  text += array("TRAINING_ARGS", training_flags(job));
  text += "if [ -n \"$DATA_PATH\" ]; then\n"
          "    DATA_ARGS=(--data-path \"$DATA_PATH\" --tokenizer-type HuggingFaceTokenizer --tokenizer-model \"$TOKENIZER_MODEL\" --split 99,1,0)\n"
          "else\n    DATA_ARGS=(--mock-data --tokenizer-type NullTokenizer)\nfi\n\n";
  text += "torchrun --nproc_per_node \"$GPUS_PER_NODE\" --nnodes \"$NUM_NODES\" --node_rank \"$NODE_RANK\" \\\n"
          "    --master_addr \"$MASTER_ADDR\" --master_port \"$MASTER_PORT\" \\\n"
          "    pretrain_gpt.py \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"${STATE_ARGS[@]}\" \"${TRAINING_ARGS[@]}\" \\\n"
          "    \"${DATA_ARGS[@]}\" --log-interval 10 --log-throughput\n";
  return {{"train_megatron.sh", text}};
}

}  // namespace gpuplan::framework
