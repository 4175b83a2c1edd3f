// The launch-configuration readers on real launch files (tests/data/frameworks/<framework>/, copied unchanged from
// the repositories their .SOURCE files name). Every expected value is from that folder's EXPECTED.json, worked
// out by hand from the file and the framework's rules; the invalid ones must give EXPECTED.json's reason.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "framework/launch.hpp"
#include "gpuplan/model_io.hpp"

using gpuplan::framework::LaunchConfig;
using gpuplan::framework::read_launch_config;

namespace {

LaunchConfig read_example(const std::string& relative) {
  const std::string path = std::string(GPUPLAN_TEST_DATA_DIR) + "/frameworks/" + relative;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << path;
  return read_launch_config(relative, text.str());
}

std::int64_t get(const nlohmann::json& group, const char* key, std::int64_t fallback = -1) {
  return group.contains(key) ? group.at(key).get<std::int64_t>() : fallback;
}

std::string text(const nlohmann::json& group, const char* key) {
  return group.contains(key) ? group.at(key).get<std::string>() : "";
}

bool mentions(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& line : lines)
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

// The model a reader built from a script, as gpuplan reads it.
gpuplan::ModelConfig model_of(const LaunchConfig& c) {
  const nlohmann::json& model = c.model.at("model");
  return gpuplan::model_from_hf_config(model.at("config").dump(), "script");
}

}  // namespace

TEST(MegatronExamples, Gpt3175bReadsItsLayoutAndReportsBothFaults) {
  const LaunchConfig c = read_example("megatron/train_gpt3_175b_distributed.sh");
  EXPECT_EQ(get(c.layout, "tp"), 8);
  EXPECT_EQ(get(c.layout, "pp"), 16);
  EXPECT_EQ(get(c.layout, "cp", 1), 1);
  EXPECT_EQ(get(c.training, "micro_batch"), 1);
  EXPECT_EQ(get(c.training, "global_batch"), 1536);
  EXPECT_EQ(get(c.training, "seq_len"), 2048);
  EXPECT_EQ(text(c.training, "precision"), "fp16");
  EXPECT_EQ(get(c.layout, "zero"), 0);   // no --use-distributed-optimizer
  EXPECT_FALSE(c.layout.contains("recompute"));
  EXPECT_EQ(c.gpus.value_or(0), 8);      // GPUS_PER_NODE=8, NUM_NODES=1
  const gpuplan::ModelConfig m = model_of(c);
  EXPECT_EQ(m.layers, 96);
  EXPECT_EQ(m.hidden, 12288);
  EXPECT_EQ(m.heads, 96);
  EXPECT_EQ(m.kv_heads, 96);
  EXPECT_EQ(m.ffn_hidden, 49152);        // 4 x hidden, Megatron's default without --swiglu
  EXPECT_EQ(m.positions, gpuplan::PositionKind::learned);
  EXPECT_EQ(m.max_positions, 2048);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(m.vocab, 50257);             // GPT-2 BPE files
  // "tp*pp = 128 does not divide the 8 GPUs"; "--global-batch-size together with --step-batch-size-schedule".
  EXPECT_TRUE(mentions(c.issues, "does not divide the 8 GPUs")) << ::testing::PrintToString(c.issues);
  EXPECT_TRUE(mentions(c.errors, "--step-batch-size-schedule")) << ::testing::PrintToString(c.errors);
}

TEST(MegatronExamples, UnknownFlagsPastTheEighthAreListedWithoutASuggestion) {
  // Ten misspellings of --num-layers: each is an error; the first eight name the flag it is near.
  std::string script = "torchrun --nproc_per_node 8 pretrain_gpt.py";
  for (int i = 0; i < 10; ++i) script += " --num-layerz" + std::to_string(i) + " 4";
  const LaunchConfig c = read_launch_config("train.sh", script + "\n");
  int unknown = 0, suggested = 0;
  for (const std::string& e : c.errors) {
    if (e.find("is not an argument of pretrain_gpt.py") == std::string::npos) continue;
    ++unknown;
    if (e.find("did you mean --num-layers") != std::string::npos) ++suggested;
  }
  EXPECT_EQ(unknown, 10) << ::testing::PrintToString(c.errors);
  EXPECT_EQ(suggested, 8) << ::testing::PrintToString(c.errors);
}

TEST(MegatronExamples, MixtralNeedsThirtyTwoGpusForItsExpertGrid) {
  const LaunchConfig c = read_example("megatron/train_mixtral_8x7b_distributed.sh");
  EXPECT_TRUE(c.errors.empty()) << ::testing::PrintToString(c.errors);
  EXPECT_EQ(get(c.layout, "tp"), 1);
  EXPECT_EQ(get(c.layout, "pp"), 4);
  EXPECT_EQ(get(c.layout, "ep"), 8);
  EXPECT_TRUE(c.layout.at("sequence_parallel").get<bool>());   // given; Megatron switches it off at tp 1
  EXPECT_EQ(get(c.training, "global_batch"), 256);
  EXPECT_EQ(get(c.training, "seq_len"), 4096);
  EXPECT_EQ(text(c.training, "precision"), "bf16");
  EXPECT_EQ(get(c.layout, "zero"), 1);
  EXPECT_FALSE(c.timing.contains("no_dp_overlap"));        // --overlap-grad-reduce
  const gpuplan::ModelConfig m = model_of(c);
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.ffn_hidden, 14336);
  EXPECT_EQ(m.mlp, gpuplan::MlpKind::gated);
  EXPECT_EQ(m.norm, gpuplan::NormKind::rmsnorm);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_FALSE(m.mlp_bias);
  EXPECT_EQ(m.vocab, 32000);             // Llama-2 tokenizer
  EXPECT_EQ(m.moe.routed_experts, 8);
  EXPECT_EQ(m.moe.top_k, 2);
  EXPECT_EQ(m.moe.expert_ffn_hidden, 14336);
  // etp x ep x pp = 1 x 8 x 4 = 32 does not divide the 8 GPUs.
  EXPECT_TRUE(mentions(c.issues, "32 GPUs")) << ::testing::PrintToString(c.issues);
}

TEST(MegatronExamples, Llama3Fp8SplitsItsArrayElementsAsBashDoes) {
  const LaunchConfig c = read_example("megatron/train_llama3_8b_h100_fp8.sh");
  EXPECT_TRUE(c.errors.empty()) << ::testing::PrintToString(c.errors);
  EXPECT_TRUE(c.issues.empty()) << ::testing::PrintToString(c.issues);
  EXPECT_EQ(get(c.layout, "tp"), 1);
  EXPECT_EQ(get(c.layout, "cp"), 1);
  EXPECT_FALSE(c.layout.contains("pp"));   // commented out in the array
  EXPECT_EQ(get(c.training, "micro_batch"), 1);
  EXPECT_EQ(get(c.training, "global_batch"), 128);
  EXPECT_EQ(get(c.training, "seq_len"), 8192);
  EXPECT_EQ(text(c.training, "precision"), "fp8");   // "--fp8-format hybrid", one array element split in two
  EXPECT_EQ(text(c.training, "loss"), "fused-native");
  EXPECT_EQ(text(c.training, "grad_dtype"), "bf16");  // --grad-reduce-in-bf16
  EXPECT_EQ(get(c.layout, "zero"), 1);
  EXPECT_EQ(c.gpus.value_or(0), 8);
  const gpuplan::ModelConfig m = model_of(c);
  EXPECT_EQ(m.head_width(), 128);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.positions, gpuplan::PositionKind::rotary);
}

TEST(MegatronExamples, DeepSeekV3FsdpBranchAndItsModel) {
  const LaunchConfig c = read_example("megatron/sbatch_mfsdp_deepseek_v3.sh");
  EXPECT_TRUE(c.errors.empty()) << ::testing::PrintToString(c.errors);
  EXPECT_EQ(get(c.layout, "tp"), 1);     // ${TP:-1}
  EXPECT_EQ(get(c.layout, "ep"), 8);     // ${EP:-8}
  EXPECT_EQ(get(c.layout, "etp"), 1);
  EXPECT_EQ(get(c.training, "micro_batch"), 4);
  EXPECT_EQ(get(c.training, "global_batch"), 2048);
  EXPECT_EQ(text(c.layout, "recompute"), "selective");
  EXPECT_EQ(get(c.layout, "zero"), 3);   // Megatron-FSDP, optim_grads_params
  EXPECT_EQ(get(c.training, "make_vocab_size_divisible_by"), 3232);
  EXPECT_FALSE(c.gpus.has_value());      // the node count is a placeholder
  const gpuplan::ModelConfig m = model_of(c);
  EXPECT_EQ(m.layers, 61);
  EXPECT_TRUE(m.mla.enabled);
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  EXPECT_EQ(m.mla.kv_lora_rank, 512);
  EXPECT_EQ(m.moe.routed_experts, 256);
  EXPECT_EQ(m.moe.first_dense_layers, 3);   // [0]*3+[1]*58
  EXPECT_EQ(m.moe.expert_ffn_hidden, 2048);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden, 2048);
  EXPECT_EQ(m.moe.top_k, 8);
  EXPECT_EQ(m.moe.router_groups, 8);          // --moe-router-num-groups 8
  EXPECT_EQ(m.moe.router_groups_chosen, 4);   // --moe-router-group-topk 4
  EXPECT_TRUE(mentions(c.not_understood, "--mtp-num-layers"));   // multi-token prediction is not modelled
}

TEST(DeepSpeedExamples, EachConfigGivesItsBatchStageOffloadAndPrecision) {
  const LaunchConfig sdma = read_example("deepspeed/sdma_allgather_ds_config_zero3.json");
  EXPECT_EQ(get(sdma.training, "micro_batch"), 1);
  EXPECT_EQ(get(sdma.layout, "zero"), 3);
  EXPECT_EQ(text(sdma.training, "precision"), "bf16");
  EXPECT_EQ(text(sdma.training, "optimizer"), "adamw");
  EXPECT_FALSE(sdma.timing.contains("no_dp_overlap"));   // overlap_comm true
  EXPECT_EQ(get(sdma.training, "reduce_bucket_size"), 50'000'000);   // written 5e7
  EXPECT_EQ(get(sdma.training, "allgather_bucket_size"), 50'000'000);
  EXPECT_EQ(get(sdma.training, "stage3_prefetch_bucket_size"), 50'000'000);
  EXPECT_EQ(get(sdma.training, "stage3_max_live_parameters"), 1'000'000'000);
  const LaunchConfig gpt2 = read_example("deepspeed/megatron_gpt2_ds_config_func_bs8_zero2_offload.json");
  EXPECT_EQ(get(gpt2.training, "global_batch"), 8);
  EXPECT_EQ(get(gpt2.layout, "zero"), 2);
  EXPECT_EQ(text(gpt2.layout, "offload"), "optimizer");   // the deprecated cpu_offload: true
  EXPECT_EQ(text(gpt2.training, "precision"), "fp16");
  EXPECT_TRUE(gpt2.timing.at("no_dp_overlap").get<bool>());   // overlap_comm defaults to False below stage 3
  EXPECT_EQ(get(gpt2.training, "reduce_bucket_size"), 7'000'000);
  EXPECT_EQ(get(gpt2.training, "allgather_bucket_size"), 7'000'000);
  const LaunchConfig compile = read_example("deepspeed/torch_compile_ds_config_z3.json");
  EXPECT_EQ(get(compile.layout, "zero"), 3);
  EXPECT_TRUE(compile.timing.at("no_dp_overlap").get<bool>());   // overlap_comm false
  const LaunchConfig autotp = read_example("deepspeed/docs_autotp_training_preset.json");
  EXPECT_EQ(get(autotp.layout, "tp"), 4);
  EXPECT_EQ(get(autotp.layout, "zero"), 2);
  EXPECT_EQ(get(autotp.training, "global_batch"), 8);
  const LaunchConfig infinity = read_example("deepspeed/docs_zero_infinity_cpu_offload.json");
  EXPECT_EQ(text(infinity.layout, "offload"), "optimizer+params");
  EXPECT_EQ(text(infinity.layout, "offload_target"), "cpu");
}

// DeepSpeed accepts the stage3_ keys by their plain names too (populate_by_name in zero/config.py); a size that is
// not a whole number is an error, as DeepSpeed's int fields reject it; 0, which DeepSpeed allows, keeps the default.
TEST(DeepSpeedExamples, BucketSizesUnderEitherNameAndBadOnesReported) {
  const LaunchConfig plain = read_launch_config(
      "ds_config.json", R"({"train_batch_size": 8, "zero_optimization": {"stage": 3, "prefetch_bucket_size": 2e7,
                            "max_live_parameters": 3e8, "reduce_bucket_size": 0}})");
  EXPECT_EQ(get(plain.training, "stage3_prefetch_bucket_size"), 20'000'000);
  EXPECT_EQ(get(plain.training, "stage3_max_live_parameters"), 300'000'000);
  EXPECT_FALSE(plain.training.contains("reduce_bucket_size"));
  EXPECT_TRUE(mentions(plain.not_understood, "zero_optimization.reduce_bucket_size 0"));
  const LaunchConfig bad = read_launch_config(
      "ds_config.json", R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "allgather_bucket_size": 1.5}})");
  EXPECT_TRUE(mentions(bad.errors, "zero_optimization.allgather_bucket_size is 1.5")) << ::testing::PrintToString(bad.errors);
}

TEST(DeepSpeedExamples, FragmentsWithoutABatchAreReported) {
  // "autotuner template without batch keys; on its own DeepSpeedConfig asserts that train_batch_size or
  // train_micro_batch_size_per_gpu is required".
  const LaunchConfig c = read_example("deepspeed/autotuning_template_zero3.json");
  EXPECT_TRUE(mentions(c.issues, "train_batch_size")) << ::testing::PrintToString(c.issues);
  EXPECT_EQ(get(c.layout, "zero"), 3);
}

TEST(TorchtitanExamples, LlamaJobsReadTheirDegreesBatchAndRecompute) {
  const LaunchConfig small = read_example("torchtitan/llama3_8b.toml");
  EXPECT_TRUE(small.errors.empty()) << ::testing::PrintToString(small.errors);
  EXPECT_EQ(text(small.model, "model"), "llama-3.1-8b");
  EXPECT_EQ(get(small.layout, "tp"), 1);
  EXPECT_FALSE(small.layout.contains("dp"));   // data_parallel_shard_degree -1: the world
  EXPECT_EQ(get(small.training, "micro_batch"), 1);
  EXPECT_EQ(get(small.training, "seq_len"), 8192);
  EXPECT_EQ(text(small.layout, "recompute"), "selective");
  EXPECT_EQ(get(small.layout, "zero"), 3);       // FSDP2, reshard after forward
  EXPECT_EQ(small.gpus.value_or(0), 64);         // "a preset for 64 A100 GPUs"
  const LaunchConfig large = read_example("torchtitan/llama3_70b.toml");
  EXPECT_EQ(get(large.layout, "tp"), 8);
  EXPECT_EQ(get(large.training, "micro_batch"), 8);
  EXPECT_EQ(text(large.layout, "recompute"), "full");
}

TEST(TorchtitanExamples, The405bJobNamesAnUnregisteredConverter) {
  const LaunchConfig c = read_example("torchtitan/llama3_405b.toml");
  EXPECT_EQ(get(c.layout, "tp"), 8);
  EXPECT_TRUE(c.timing.at("tp_overlap").get<bool>());   // async TP, with compile on
  EXPECT_EQ(get(c.training, "micro_batch"), 2);
  EXPECT_EQ(c.gpus.value_or(0), 128);
  EXPECT_TRUE(mentions(c.issues, "\"float8\" is not a registered converter")) << ::testing::PrintToString(c.issues);
}

TEST(TorchtitanExamples, DeepSeekSixteenBIsTheFlavoursModel) {
  const LaunchConfig c = read_example("torchtitan/deepseek_v3_16b.toml");
  EXPECT_EQ(get(c.layout, "ep"), 8);
  EXPECT_EQ(get(c.layout, "etp"), 1);
  EXPECT_EQ(get(c.training, "micro_batch"), 4);
  EXPECT_EQ(get(c.training, "seq_len"), 4096);
  const gpuplan::ModelConfig m = gpuplan::model_from_hf_config(c.model.at("model").at("config").dump(), "16B");
  EXPECT_EQ(m.layers, 27);
  EXPECT_EQ(m.moe.routed_experts, 64);
  EXPECT_EQ(m.moe.shared_experts, 2);
  EXPECT_EQ(m.moe.top_k, 6);
}

TEST(NemoExamples, RecipesGiveTheirTrainerDefaults) {
  const LaunchConfig small = read_example("nemo/llama3_8b.py");
  EXPECT_EQ(small.gpus.value_or(0), 8);
  EXPECT_EQ(get(small.layout, "tp"), 1);
  EXPECT_EQ(get(small.layout, "cp"), 2);
  EXPECT_FALSE(small.layout.contains("vpp"));
  EXPECT_FALSE(small.layout.at("sequence_parallel").get<bool>());
  EXPECT_EQ(get(small.training, "micro_batch"), 1);
  EXPECT_EQ(get(small.training, "global_batch"), 512);
  EXPECT_EQ(get(small.training, "seq_len"), 8192);
  EXPECT_EQ(text(small.training, "precision"), "bf16");
  EXPECT_EQ(text(small.training, "grad_dtype"), "fp32");
  EXPECT_EQ(get(small.layout, "zero"), 1);   // distributed fused Adam
  EXPECT_TRUE(small.issues.empty()) << ::testing::PrintToString(small.issues);
  const LaunchConfig moe = read_example("nemo/mixtral_8x7b.py");
  EXPECT_EQ(moe.gpus.value_or(0), 64);
  EXPECT_EQ(get(moe.layout, "pp"), 4);
  EXPECT_EQ(get(moe.layout, "vpp"), 8);
  EXPECT_EQ(get(moe.layout, "ep"), 8);
  EXPECT_EQ(text(moe.model, "model"), "mixtral-8x7b");
  EXPECT_TRUE(moe.issues.empty()) << ::testing::PrintToString(moe.issues);
}

TEST(NemoExamples, Llama70bPretrainRecipeDefaultsToOneNodeButNeedsFour) {
  const LaunchConfig c = read_example("nemo/llama3_70b.py");
  EXPECT_EQ(c.gpus.value_or(0), 8);   // pretrain_recipe(num_nodes=1)
  EXPECT_EQ(get(c.layout, "tp"), 4);
  EXPECT_EQ(get(c.layout, "pp"), 4);
  EXPECT_EQ(get(c.layout, "vpp"), 5);
  EXPECT_EQ(get(c.layout, "cp"), 2);
  EXPECT_TRUE(c.layout.at("sequence_parallel").get<bool>());
  EXPECT_TRUE(mentions(c.issues, "multiple of 32 GPUs")) << ::testing::PrintToString(c.issues);
}

TEST(NemoExamples, AnOverrideListOnABuiltInRecipe) {
  const LaunchConfig c = read_launch_config(
      "launch.txt",
      "nemo llm pretrain --factory \"llama3_70b(num_nodes=4)\" -y \\\n"
      "  trainer.strategy.tensor_model_parallel_size=8 data.global_batch_size=1024 some.unknown=1\n");
  EXPECT_EQ(c.gpus.value_or(0), 32);
  EXPECT_EQ(get(c.layout, "tp"), 8);
  EXPECT_EQ(get(c.layout, "pp"), 4);   // the recipe's
  EXPECT_EQ(get(c.training, "global_batch"), 1024);
  EXPECT_TRUE(mentions(c.not_understood, "some.unknown"));
}

TEST(NemoExamples, OverridesOfTheWrongTypeAreReportedNotReadAsDefaults) {
  // Each of these was read silently before: a bad node count made the GPUs tp x pp x cp (2 here, not the 8 the recipe
  // launches), and a boolean that is not True or False was read as False.
  struct Case { const char* override_text; const char* reported; };
  const Case cases[] = {
      {"trainer.num_nodes=2.5", "trainer.num_nodes is not a node count"},
      {"trainer.devices=eight", "trainer.devices is not a GPU count"},
      {"trainer.strategy.sequence_parallel=maybe", "sequence_parallel is not a boolean"},
      {"model.config.cross_entropy_loss_fusion=yes", "cross_entropy_loss_fusion is not a boolean"},
      {"trainer.strategy.ddp.overlap_grad_reduce=2", "overlap_grad_reduce is not a boolean"},
      {"trainer.strategy.ddp.data_parallel_sharding_strategy=optim_all", "accepted: no_shard, optim, optim_grads"},
      {"model.config.moe_expert_capacity_factor=abc", "moe_expert_capacity_factor is not a number"},
  };
  for (const Case& c : cases) {
    const LaunchConfig config = read_launch_config(
        "launch.txt", std::string("nemo llm pretrain --factory llama3_8b ") + c.override_text + "\n");
    EXPECT_TRUE(mentions(config.issues, c.reported)) << c.override_text << ": " << ::testing::PrintToString(config.issues);
  }
  // The spellings the override parser does turn into booleans still read.
  const LaunchConfig lower = read_launch_config(
      "launch.txt", "nemo llm pretrain --factory llama3_8b trainer.strategy.sequence_parallel=true\n");
  EXPECT_TRUE(lower.issues.empty()) << ::testing::PrintToString(lower.issues);
  EXPECT_TRUE(lower.layout.at("sequence_parallel").get<bool>());
}
