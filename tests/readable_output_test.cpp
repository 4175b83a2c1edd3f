// What a person reads: counts and sizes in natural units, nouns that agree with their numbers, the GPU that memory
// is checked against, and placements that say where a group really lands.
#include <gtest/gtest.h>

#include <string>

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
  // h100-sxm-80gb: 81,559 MiB usable as the driver reports it (data/hardware/gpus.json) = 85.5 GB.
  const auto assumed = run_cli("memory --model llama-3.1-8b");
  expect_contains(assumed.out, "GPU: h100-sxm-80gb, 85.5 GB (79.6 GiB) usable (the default;");
  const auto named = run_cli("memory --model llama-3.1-8b --gpu a100-sxm-40gb");
  expect_contains(named.out, "GPU: a100-sxm-40gb, ");
  expect_lacks(named.out, "the default");
  expect_contains(run_cli("memory --model llama-3.1-8b --gpu-memory 40GB").out,
                  "GPU memory: 40.0 GB (37.3 GiB) usable");
  api::MemoryRequest request;
  request.model.name_or_path = "llama-3.1-8b";
  const api::MemoryResult result = api::run(request);
  EXPECT_EQ(result.gpu, "h100-sxm-80gb");
  EXPECT_TRUE(result.gpu_assumed);
}

TEST(ReadableOutput, NoGroupIsAcrossNodesOnOneNode) {
  // One DGX A100 node: every TP or CP group of the sensitivity lies inside its NVLink.
  api::PlanRequest r;
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
  // The same questions on NVIDIA systems keep NVIDIA's names.
  expect_contains(run_cli("comm allreduce --size 1GiB --ranks 8 --system dgx-h100").out, "NCCL would consider");
}
