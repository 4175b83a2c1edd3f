// Offload against the node: states offloaded to host memory or NVMe by all of a node's GPUs must fit the node's
// RAM and drives, and NVMe offload is timed from the drives' rates. Every expected value is derived here by hand
// from the catalog (data/hardware/systems.json: dgx-h100), DeepSpeed's defaults (data/overheads.json) and the
// model's shape, not copied from the program's output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace offload_host_test {

// Llama-3.1-405B, counted by hand: 126 layers of hidden 16384, 128 query heads and 8 key/value heads of 128
// channels, SwiGLU FFN 53248, vocabulary 128256, untied embeddings.
//   attention  16384 x 16384 (q) + 2 x 16384 x 1024 (k, v) + 16384 x 16384 (o)  =   570,425,344
//   MLP        3 x 16384 x 53248                                                 = 2,617,245,696
//   norms      2 x 16384                                                         =        32,768
//   one layer                                                                    = 3,187,703,808
//   126 layers                                                                   = 401,650,679,808
//   embedding + output layer 2 x 128256 x 16384 = 4,202,692,608; final norm 16384
constexpr double kParams405B = 405853388800.0;

// ZeRO-3 over 8 data-parallel GPUs shards every parameter 8 ways: 50,731,673,600 parameters per GPU.
constexpr double kShard = kParams405B / 8;

// Fully offloaded (ZeRO-Offload/ZeRO-Infinity, bf16 mixed precision with Adam) each parameter keeps
// 2 B bf16 weight + 4 B fp32 master copy + 8 B Adam moments + 4 B fp32 gradient = 18 B off the GPU.
constexpr double kOffloadedPerGpu = kShard * 18;         // 913,170,124,800 B
constexpr double kOffloadedPerNode = 8 * kOffloadedPerGpu;  // 7,305,360,998,400 B: 7.3 TB for one DGX H100

// DGX H100 (datasheet): 2 TB of RAM, 8x 3.84 TB NVMe = 30.72 TB.
constexpr double kDgxH100Ram = 2e12;
constexpr double kDgxH100Nvme = 30.72e12;

const std::string k405BOnOneNode =
    "memory --model llama-3.1-405b --system dgx-h100 --gpus 8 --framework deepspeed --zero 3 --offload optimizer+params "
    "--recompute full --seq-len 4096 --global-batch 64 ";

nlohmann::json json_of(const std::string& args) {
  const auto r = run_cli(args + " --json");
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  return nlohmann::json::parse(r.out);
}

bool lists(const nlohmann::json& list, const std::string& what) {
  for (const auto& item : list)
    if (item == what) return true;
  return false;
}


TEST(OffloadHost, FullCpuOffloadOf405BOnOneDgxH100DoesNotFitItsHostMemory) {
  const auto j = json_of(k405BOnOneNode);
  EXPECT_DOUBLE_EQ(j["host"]["total"].get<double>(), kOffloadedPerGpu);
  EXPECT_EQ(j["host"]["gpus_per_node"], 8);
  EXPECT_DOUBLE_EQ(j["host"]["needed_per_node"].get<double>(), kOffloadedPerNode);
  EXPECT_DOUBLE_EQ(j["host"]["capacity_per_node"].get<double>(), kDgxH100Ram);
  EXPECT_EQ(j["host"]["fits"], false);
  EXPECT_EQ(j["fits"], false);
  ASSERT_TRUE(j.contains("does_not_fit"));
  EXPECT_TRUE(lists(j["does_not_fit"], "host memory"));
  EXPECT_FALSE(lists(j["does_not_fit"], "gpu memory")) << "the GPU side fits: host memory alone is short";

  // The text says so and names host memory.
  const auto text = run_cli(k405BOnOneNode);
  EXPECT_NE(text.out.find("host memory does NOT fit"), std::string::npos) << text.out;
}

TEST(OffloadHost, SuggestionsOfferWhatFitsTheNode) {
  const auto j = json_of(k405BOnOneNode);
  bool nvme = false, more_gpus = false;
  for (const auto& s : j["suggestions"]) {
    // NVMe: the 7.3 TB go to the node's 30.72 TB of drives; host memory keeps 17 GB of buffers per GPU.
    if (s["change"] == "--offload-target nvme") nvme = s["fits"].get<bool>();
    // 32 GPUs shard 4x finer: 8 x 18 B x 405.85e9 / 32 = 1.83 TB per node, under 2 TB (16 GPUs: 3.65 TB, over).
    if (s["change"] == "--gpus 32") more_gpus = s["fits"].get<bool>();
    if (s["change"] == "--gpus 16") {
      EXPECT_EQ(s["fits"], false) << "16 GPUs still need 3.65 TB per node";
    }
  }
  EXPECT_TRUE(nvme);
  EXPECT_TRUE(more_gpus);
}

TEST(OffloadHost, NvmeOffloadKeepsOnlyPinnedBuffersInHostMemory) {
  const auto j = json_of(k405BOnOneNode + "--offload-target nvme");
  // DeepSpeed's defaults: 4 optimizer swap buffers of one 1e9-element fp32 sub-group (4 x 1e9 x 4 B = 16 GB) and
  // 5 parameter buffers of 1e8 bf16 elements (5 x 1e8 x 2 B = 1 GB): 17 GB per GPU, 136 GB per node.
  EXPECT_DOUBLE_EQ(j["host"]["pinned_buffers"].get<double>(), 17e9);
  EXPECT_DOUBLE_EQ(j["host"]["needed_per_node"].get<double>(), 8 * 17e9);
  EXPECT_EQ(j["host"]["fits"], true);
  EXPECT_DOUBLE_EQ(j["nvme"]["total"].get<double>(), kOffloadedPerGpu);
  EXPECT_DOUBLE_EQ(j["nvme"]["needed_per_node"].get<double>(), kOffloadedPerNode);
  EXPECT_DOUBLE_EQ(j["nvme"]["capacity_per_node"].get<double>(), kDgxH100Nvme);
  EXPECT_EQ(j["fits"], true);
}

TEST(OffloadHost, CapacitiesGivenOnTheCommandLineReplaceTheSystems) {
  // 8 TB of RAM holds the 7.31 TB.
  EXPECT_EQ(json_of(k405BOnOneNode + "--host-memory 8TB")["fits"], true);
  // 5 TB of NVMe does not: NVMe is named as what is short.
  const auto j = json_of(k405BOnOneNode + "--offload-target nvme --nvme-capacity 5TB");
  EXPECT_EQ(j["fits"], false);
  EXPECT_DOUBLE_EQ(j["nvme"]["capacity_per_node"].get<double>(), 5e12);
  EXPECT_TRUE(lists(j["does_not_fit"], "nvme"));
  EXPECT_FALSE(lists(j["does_not_fit"], "host memory"));
  // Without a system, the GPUs sharing the node are given: 4 GPUs x 913.17 GB = 3.65 TB of 4 TB fits.
  const auto four = json_of(
      "memory --model llama-3.1-405b --gpus 8 --framework deepspeed --zero 3 --offload optimizer+params --recompute full --seq-len 4096 "
      "--global-batch 64 --host-memory 4TB --gpus-per-node 4");
  EXPECT_DOUBLE_EQ(four["host"]["needed_per_node"].get<double>(), 4 * kOffloadedPerGpu);
  EXPECT_EQ(four["host"]["fits"], true);
}

TEST(OffloadHost, HostCapacityNeedsItsUnitAndTheGpusSharingIt) {
  const std::string base = "memory --model llama-3.1-8b --gpus 8 --framework deepspeed --zero 3 --offload optimizer ";
  const auto no_unit = run_cli(base + "--host-memory 2");
  EXPECT_EQ(no_unit.status, 2);
  EXPECT_EQ(no_unit.err.find("gpuplan: error: --host-memory:"), 0u) << no_unit.err;
  const auto no_node = run_cli(base + "--nvme-capacity 30TB");
  EXPECT_EQ(no_node.status, 2);
  EXPECT_EQ(no_node.err.find("gpuplan: error: --gpus-per-node:"), 0u) << no_node.err;
}

TEST(OffloadHost, EstimateNamesTheHostMemoryShortfall) {
  const auto j = json_of(
      "estimate --model llama-3.1-405b --system dgx-h100 --nodes 1 --framework deepspeed --zero 3 --offload optimizer+params "
      "--recompute full --seq-len 4096 --global-batch 64");
  EXPECT_EQ(j["memory"]["fits"], false);
  EXPECT_TRUE(lists(j["memory"]["does_not_fit"], "host memory"));
  EXPECT_DOUBLE_EQ(j["memory"]["host"]["needed_per_node"].get<double>(), kOffloadedPerNode);
}

TEST(OffloadHost, NvmeOffloadHasItsOwnTermPricedFromTheDrives) {
  const std::string args =
      "estimate --model llama-3.1-405b --system dgx-h100 --nodes 1 --framework deepspeed --zero 3 --offload optimizer "
      "--recompute full --seq-len 4096 --global-batch 64";
  const auto cpu = json_of(args);
  EXPECT_EQ(cpu["time"]["breakdown"]["nvme_offload"], 0.0);
  const auto nvme = json_of(args + " --offload-target nvme");
  const double term = nvme["time"]["breakdown"]["nvme_offload"].get<double>();
  // The 8 GPUs share the node's 8 drives: 51.2 GB/s read / 8 = 6.4 GB/s and 30.4 GB/s write / 8 = 3.8 GB/s each
  // (below the PCIe 5 x16 host link). The optimizer step reads the shard's fp32 master copy, Adam moments and
  // gradients (16 B per parameter) and writes the master copy and moments back (12 B), one after the other
  // (pipeline_read/pipeline_write off by default):
  const double states_in = kShard * 16 / 6.4e9;    // 126.83 s
  const double states_out = kShard * 12 / 3.8e9;   // 160.21 s
  // The gradients' writes (4 B per parameter) hide behind the last backward only as far as it is longer.
  const double gradients_out = kShard * 4 / 3.8e9;  // 53.40 s at most
  EXPECT_GE(term, (states_in + states_out) * (1 - 1e-9));
  EXPECT_LE(term, (states_in + states_out + gradients_out) * (1 + 1e-9));
  // Priced as CPU offload it would have been the host link's few seconds: the drives make it minutes.
  EXPECT_GT(nvme["time"]["step_s"].get<double>(), cpu["time"]["step_s"].get<double>() + 200);
}

TEST(OffloadHost, NvmeOffloadNeedsTheDrivesRates) {
  // HGX is a baseboard: the catalog states no NVMe rates for it.
  const auto r = run_cli(
      "estimate --model llama-3.1-8b --system hgx-h100 --nodes 1 --framework deepspeed --zero 3 --offload optimizer --offload-target nvme");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find("gpuplan: error: --offload-target: nvme;"), 0u) << r.err;
  EXPECT_NE(r.err.find("nvme_write_GBps"), std::string::npos) << r.err;
}

TEST(OffloadHost, PlanProposesOnlyLayoutsTheNodeHolds) {
  // With 1 TB of RAM per node no CPU offload of Llama-3.1-70B's states on one node fits (70.55e9 parameters x
  // 16 B of fp32 master, moments and gradients = 1.13 TB), so every plan that offloads keeps its states on NVMe.
  const auto j = json_of(
      "plan --model llama-3.1-70b --system dgx-h100 --nodes 1 --seq-len 4096 --global-batch 32 --framework deepspeed --zero 3 "
      "--host-memory 1TB --top 20 --threads 1");
  for (const auto& p : j["plans"]) {
    const auto& host = p["memory"]["host"];
    if (host.contains("fits")) {
      EXPECT_EQ(host["fits"], true) << p["command"];
    }
    if (host.contains("needed_per_node")) {
      EXPECT_LE(host["needed_per_node"].get<double>(), 1e12) << p["command"];
    }
    EXPECT_EQ(p["memory"]["fits"], true) << p["command"];
    // The command that reproduces the plan checks the same capacity.
    EXPECT_NE(p["command"].get<std::string>().find("--host-memory 1TB"), std::string::npos) << p["command"];
  }
  EXPECT_FALSE(j["plans"].empty());
}

TEST(OffloadHost, NearMissesNameTheHostMemoryTheyLack) {
  // DeepSeek-V3 (671,026,419,200 parameters, its Hugging Face truth.json) on 4 DGX H100: with the optimizer offloaded
  // and ZeRO-3 over the 32 GPUs each keeps 16 B (fp32 master, Adam moments, fp32 gradient) x P / 32 = 335.5 GB in
  // host memory, 8 x 335.5 GB = 2.68 TB per host of 2 TB. Host memory, not the GPU, is what the closest layouts
  // lack, and the text says so.
  const std::string args = "plan --model deepseek-v3 --system dgx-h100 --nodes 4 --seq-len 4096 --global-batch 256";
  const auto text = run_cli(args);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("Nothing fits."), std::string::npos) << text.out;
  const double per_host = 8 * 16 * 671026419200.0 / 32;
  EXPECT_NEAR(per_host, 2.684e12, 1e9);
  EXPECT_NE(text.out.find("needs 2.68 TB of host memory per host (335.5 GB per GPU), 2.00 TB there"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("lacks -"), std::string::npos) << "a near miss that fits the GPU lacks no GPU memory";
  // What to change is what is short: nodes bring host memory, and DeepSpeed's ZeRO-Infinity offloads to NVMe.
  const std::string options = "Options: more nodes (each brings its host memory), offload to NVMe where";
  EXPECT_NE(text.out.find(options), std::string::npos) << text.out;
  const auto j = json_of(args);
  ASSERT_FALSE(j["near_misses"].empty());
  for (const auto& miss : j["near_misses"]) EXPECT_TRUE(lists(miss["memory"]["does_not_fit"], "host memory")) << miss;
}

}  // namespace offload_host_test
