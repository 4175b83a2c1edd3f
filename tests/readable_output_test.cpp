// What a person reads: counts and sizes in natural units, nouns that agree with their numbers, the GPU that memory
// is checked against, and placements that say where a group really lands.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "gpuplan/api.hpp"

using gpuplan::test::run_cli;
namespace api = gpuplan::api;

namespace {

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << text;
}

void expect_lacks(const std::string& text, const std::string& part) {
  EXPECT_EQ(text.find(part), std::string::npos) << "unexpected \"" << part << "\" in:\n" << text;
}

}  // namespace

TEST(ReadableOutput, AParameterCountReadsInItsOwnUnit) {
  const auto r = run_cli("memory --params 1e15");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "Model 1,000 T parameters on 1 GPU:");
  expect_lacks(r.out, "e+");
  expect_contains(r.out, " TB (");   // 1e15 parameters x 2 bytes of weights alone are 2,000 TB
  // GPT-2 has 124,439,808 parameters (its config.json's shapes; tests/data/hf-configs).
  expect_contains(run_cli("memory --model gpt2").out, "Model gpt2 (124.4 M parameters) on 1 GPU:");
}

TEST(ReadableOutput, NounsAgreeWithTheirNumbers) {
  const auto memory = run_cli("memory --model llama-3.1-8b");
  expect_contains(memory.out, "1 microbatch per step");
  expect_contains(memory.out, "1 microbatch in flight");
  expect_lacks(memory.out, "1 GPUs");
  const auto plan = run_cli("plan --model llama-3.1-8b --system dgx-h100 --nodes 1 --seq-len 4096 --global-batch 64 "
                            "--top 3 --threads 1");
  ASSERT_EQ(plan.status, 0) << plan.err;
  expect_contains(plan.out, "recompute=full(1 layer)");
  expect_lacks(plan.out, "(1 layers");
  expect_lacks(plan.out, "1 microbatches");
}

TEST(ReadableOutput, MemoryNamesTheGpuItChecksAgainst) {
  // h100-sxm-80gb: 81,559 MiB as the driver reports it (data/hardware/gpus.json) = 85.5 GB; with 8% kept free,
  // floor(85,520,809,984 x 0.92) = 78,679,145,185 bytes = 78.7 GB (73.3 GiB) usable.
  const auto assumed = run_cli("memory --model llama-3.1-8b");
  expect_contains(assumed.out, "GPU: h100-sxm-80gb (the default; --gpu or --gpu-memory for another): 85.5 GB "
                               "(79.6 GiB); usable 78.7 GB (73.3 GiB) with 8% kept free");
  const auto named = run_cli("memory --model llama-3.1-8b --gpu a100-sxm-40gb");
  expect_contains(named.out, "GPU: a100-sxm-40gb: ");
  expect_lacks(named.out, "the default");
  expect_contains(run_cli("memory --model llama-3.1-8b --gpu-memory 40GB").out,
                  "GPU memory: 40.0 GB (37.3 GiB); usable 36.8 GB (34.3 GiB)");
  api::MemoryRequest request;
  request.model.name_or_path = "llama-3.1-8b";
  const api::MemoryResult result = api::run(request);
  EXPECT_EQ(result.gpu, "h100-sxm-80gb");
  EXPECT_TRUE(result.gpu_assumed);
}

TEST(ReadableOutput, NoGroupIsAcrossNodesOnOneNode) {
  // One DGX A100 node: every TP or CP group of the sensitivity lies inside its NVLink. 405B fits one node only
  // with its parameters offloaded, which DeepSpeed's ZeRO-Infinity does.
  api::PlanRequest r;
  r.training.framework = "deepspeed";
  r.model.name_or_path = "llama-3.1-405b";
  r.cluster.system = "dgx-a100";
  r.cluster.nodes = 1;
  r.training.seq_len = 8192;
  r.training.global_batch = 16;
  const api::PlanResult result = api::run(r);
  ASSERT_FALSE(result.sensitivity.empty());
  for (const auto& s : result.sensitivity) EXPECT_EQ(s.change.find("across nodes"), std::string::npos) << s.change;
}

TEST(ReadableOutput, AmdSystemsSpeakOfXgmiAndRccl) {
  // MI300X nodes: 8 GPUs fully connected by Infinity Fabric (xGMI); collectives run on RCCL.
  const auto comm = run_cli("comm allreduce --size 1GiB --ranks 8 --system mi300x-8x");
  ASSERT_EQ(comm.status, 0) << comm.err;
  expect_contains(comm.out, "rccl-tests factor");
  expect_contains(comm.out, "xGMI domain");
  expect_contains(comm.out, "RCCL would consider");
  expect_lacks(comm.out, "NCCL");
  expect_lacks(comm.out, "nccl-tests");
  expect_lacks(comm.out, "NVLink");
  const auto plan = run_cli("plan --model llama-3.1-8b --system mi300x-8x --nodes 2 --seq-len 4096 --global-batch 64 "
                            "--top 1 --threads 1");
  ASSERT_EQ(plan.status, 0) << plan.err;
  expect_contains(plan.out, "(inside xGMI)");
  expect_lacks(plan.out, "NVLink");
  const auto memory = run_cli("memory --model llama-3.1-8b --gpu mi300x");
  expect_lacks(memory.out, "NCCL");
  expect_lacks(memory.out, "CUDA");
  const auto topo =
      run_cli("topo " + std::string(GPUPLAN_TEST_DATA_DIR) + "/topo/20_amd-8gpu-xgmi_rocm-smi-showtopo.txt");
  ASSERT_EQ(topo.status, 0) << topo.err;
  expect_contains(topo.out, "xGMI domains: ");
  expect_lacks(topo.out, "NVLink");
  // The same questions on NVIDIA systems keep NVIDIA's names.
  expect_contains(run_cli("comm allreduce --size 1GiB --ranks 8 --system dgx-h100").out, "NCCL would consider");
}

namespace {

nlohmann::json memory_json(const std::string& options) {
  const auto r = run_cli("memory " + options + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST(MemorySuggestions, OneMarginForMemoryAndPlan) {
  // Llama-3.1-8B at pp 2 and sequence 1536 needs 84.5 GB on an 85.5 GB GPU: it fits the card, not the 78.7 GB
  // plan would use.
  const auto j = memory_json("--model llama-3.1-8b");
  EXPECT_EQ(j.at("usable").get<std::int64_t>(), 78'679'145'185);   // floor(85,520,809,984 x 0.92)
  for (const auto& s : j.at("suggestions")) {
    if (s.at("fits").get<bool>()) {
      EXPECT_LE(s.at("new_total").get<std::int64_t>(), 78'679'145'185) << s.dump();
    }
  }
  const auto pp2 = memory_json("--model llama-3.1-8b --pp 2 --seq-len 1536");
  EXPECT_FALSE(pp2.at("fits").get<bool>());
  EXPECT_LT(pp2.at("headroom").get<std::int64_t>(), 0);
  EXPECT_TRUE(memory_json("--model llama-3.1-8b --pp 2 --seq-len 1536 --memory-margin 0").at("fits").get<bool>());
}

TEST(MemorySuggestions, NothingIsSaidToFitWithoutActivations) {
  const auto j = memory_json("--params 7e9");
  ASSERT_FALSE(j.at("suggestions").empty());
  for (const auto& s : j.at("suggestions")) EXPECT_FALSE(s.at("fits").get<bool>()) << s.dump();
  expect_contains(run_cli("memory --params 7e9").out, "no change is known to fit");
}

TEST(MemorySuggestions, TheClosestComeFirstWhenNoneFits) {
  const auto j = memory_json("--model llama-3.1-8b");
  std::int64_t previous = 0;
  for (const auto& s : j.at("suggestions")) {
    ASSERT_FALSE(s.at("fits").get<bool>());
    EXPECT_GE(s.at("new_total").get<std::int64_t>(), previous) << s.dump();
    previous = s.at("new_total").get<std::int64_t>();
  }
}

TEST(MemorySuggestions, ContextParallelismPaysForItsKeyValueExchange) {
  // Llama-3.1-8B: 8 KV heads x (128 + 128) channels x 2 bytes = 4,096 bytes per token; the ring passes a rank's
  // chunk once in forward and twice (keys/values and their gradients) in backward, in each of its 32 layers. At
  // cp 2 a rank holds half the sequence, so going from 4,096 to 131,072 tokens adds
  // 3 x 32 x 4,096 x (65,536 - 2,048) = 24,964,497,408 bytes; the gradient volume does not change.
  auto cp_cost = [](std::int64_t seq) {
    const auto j = memory_json("--model llama-3.1-8b --seq-len " + std::to_string(seq));
    for (const auto& s : j.at("suggestions"))
      if (s.at("change") == "--cp 2") return s.at("extra_comm_bytes_per_step").get<double>();
    ADD_FAILURE() << "no --cp 2 suggestion at sequence " << seq;
    return 0.0;
  };
  EXPECT_NEAR(cp_cost(131072) - cp_cost(4096), 24'964'497'408.0, 1.0);
}

TEST(ReadableOutput, SizeNounsAgreeWithTheirNumbers) {
  // One system at one node with a one-sequence batch: one search, 1 node, 1 sequence.
  const auto r = run_cli("size --model llama-3.1-8b --tokens 1T --systems dgx-h100 --nodes 1 --global-batch 1 "
                         "--threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "global batch 1 sequence (");
  expect_contains(r.out, "dgx-h100 x 1 node (8 GPUs)");
  expect_contains(r.out, "global batch 1 sequence x 2048 tokens");
  expect_contains(r.out, "\n1 search, ");
  expect_lacks(r.out, "1 nodes");
  expect_lacks(r.out, "1 sequences");
  expect_lacks(r.out, "1 searches");
}

// A term a newcomer would not guess gets a line beneath the breakdown: the experts' dispatch and combine, where an
// MoE layout pays for them, and not where nothing is routed.
TEST(ReadableOutput, TheExpertExchangeIsExplainedWhereItIsPaid) {
  const auto moe = run_cli("estimate --model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --ep 8");
  ASSERT_EQ(moe.status, 0) << moe.err;
  expect_contains(moe.out, "  ep_comm: each MoE layer's token dispatch and combine over the expert-parallel group");
  const auto dense = run_cli("estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --tp 8");
  ASSERT_EQ(dense.status, 0) << dense.err;
  expect_lacks(dense.out, "ep_comm");
}

// A warning that every plan carries is said once above the list, not under each of them.
TEST(ReadableOutput, APlanWarningSharedByEveryPlanIsSaidOnce) {
  const auto plan = run_cli("plan --model qwen3-30b-a3b --system dgx-h100 --gpus 32 --seq-len 4096 "
                            "--global-batch 512 --top 3 --threads 1");
  ASSERT_EQ(plan.status, 0) << plan.err;
  std::size_t count = 0;
  for (auto at = plan.out.find("dropless MoE under Megatron-Core"); at != std::string::npos;
       at = plan.out.find("dropless MoE under Megatron-Core", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << plan.out;
  expect_contains(plan.out, "Warning (every plan below): dropless MoE under Megatron-Core");
  expect_lacks(plan.out, "   warning: dropless MoE");
}
