// `gpuplan estimate` as a user runs it: the JSON contract against hand-derived relations and published peaks,
// the memory section equal to `gpuplan memory`, the comm calibration, and exit status 2 with one line for bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

const std::string kJob = "--model gpt2 --gpus 8 --tp 2 --seq-len 1024 --micro-batch 4 --global-batch 64";

nlohmann::json estimate(const std::string& extra) {
  const auto r = run_cli("estimate " + kJob + " --system dgx-a100 " + extra + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST(EstimateCli, JsonContract) {
  const auto j = estimate("");
  const double step = j.at("time").at("step_s").get<double>();
  ASSERT_GT(step, 0);
  double sum = 0;
  for (const auto& [name, t] : j.at("time").at("breakdown").items()) {
    EXPECT_GE(t.get<double>(), 0) << name;
    sum += t.get<double>();
  }
  EXPECT_NEAR(sum, step, 1e-9 * step);
  for (const char* part : {"forward", "backward", "tp_comm", "dp_comm", "optimizer"})
    EXPECT_TRUE(j.at("time").at("breakdown").contains(part)) << part;
  const auto& tp = j.at("throughput");
  // 64 sequences of 1024 tokens per step.
  EXPECT_NEAR(tp.at("tokens_per_s").get<double>(), 64.0 * 1024 / step, 1e-6 * 64 * 1024 / step);
  // GPT-2 (h 768, 12 layers, vocabulary 50257): Narayanan et al. SC'21, 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  const double B = 64, s = 1024, l = 12, h = 768, V = 50257;
  const double flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(tp.at("model_tflops_per_gpu").get<double>(), flops / step / 8 / 1e12, 0.01 * flops / step / 8 / 1e12);
  // A100 dense fp16/bf16 peak: 312 TFLOP/s.
  EXPECT_NEAR(tp.at("mfu").get<double>(), tp.at("model_tflops_per_gpu").get<double>() / 312.0, 1e-9);
}

TEST(EstimateCli, MemoryMatchesMemoryCommand) {
  const auto j = estimate("");
  const auto r = run_cli("memory " + kJob + " --gpu a100-sxm-80gb --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto m = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("memory").at("per_gpu"), m.at("per_gpu"));
  EXPECT_EQ(j.at("memory").at("layout"), m.at("layout"));
}

// Llama 3.1 8B at 8192 tokens with ZeRO-1 on 8 H100s: bf16 weights and gradients alone are 4 bytes per parameter,
// 32 GB, before the activations of 8192 tokens. The estimate names the three cheapest changes that make it fit as
// `gpuplan memory` does, and says how many more there are.
TEST(EstimateCli, AJobThatDoesNotFitNamesTheCheapestChanges) {
  const std::string job = "--model llama-3.1-8b --system dgx-h100 --seq-len 8192 --zero 1";
  const auto est = run_cli("estimate " + job + " --nodes 1");
  const auto mem = run_cli("memory " + job + " --gpus 8");
  ASSERT_EQ(est.status, 0) << est.err;
  ASSERT_EQ(mem.status, 0) << mem.err;
  EXPECT_NE(est.out.find("DOES NOT FIT"), std::string::npos) << est.out;
  const std::string header = "Cheapest single changes that make it fit:\n";
  const std::size_t est_at = est.out.find(header), mem_at = mem.out.find(header);
  ASSERT_NE(est_at, std::string::npos) << est.out;
  ASSERT_NE(mem_at, std::string::npos) << mem.out;
  // memory's lines start with two spaces and an option; the first three are the estimate's.
  std::size_t mem_end = mem_at + header.size(), est_end = est_at + header.size();
  int listed = 0;
  while (mem.out.compare(mem_end, 4, "  --") == 0) {
    const std::size_t next = mem.out.find('\n', mem_end) + 1;
    if (listed < 3) {
      EXPECT_EQ(est.out.compare(est_end, next - mem_end, mem.out, mem_end, next - mem_end), 0)
          << mem.out.substr(mem_end, next - mem_end) << "\n" << est.out;
      est_end += next - mem_end;
    }
    mem_end = next;
    ++listed;
  }
  ASSERT_GT(listed, 3) << mem.out;
  ASSERT_LT(listed, 8) << "memory lists them all here: " << mem.out;
  EXPECT_NE(est.out.find("and " + std::to_string(listed - 3) + " more: --json lists every one", est_end),
            std::string::npos)
      << est.out;
  // A job that fits lists nothing.
  const auto fits = run_cli("estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --zero 3");
  EXPECT_NE(fits.out.find("): fits"), std::string::npos) << fits.out;
  EXPECT_EQ(fits.out.find(header), std::string::npos) << fits.out;
}

TEST(EstimateCli, CommCalibrationPricesEveryTensorParallelCollective) {
  // A calibration that makes every intra-node collective cost 1 ms (1 PB/s: bandwidth negligible): GPT-2, 12 layers,
  // tp 2, no recompute: per microbatch 2 all-reduces forward and 2 backward per layer, 1 for the embedding and 3
  // for the loss = 52; 64 / (4 x dp 4) = 4 microbatches.
  const std::string path = ::testing::TempDir() + "estimate_cli_comm_calibration.json";
  std::ofstream(path) << R"({"comm": {"intra": {"latency_us": 1000, "bus_GBps": 1e6}}})";
  const auto j = estimate("--comm-calibration " + path);
  std::remove(path.c_str());
  // Each call also costs the framework's 23.63 us (data/perf.json collective_call_s), plus under 10 ns of bandwidth
  // time.
  EXPECT_NEAR(j.at("time").at("breakdown").at("tp_comm").get<double>(), 4 * 52 * (1e-3 + 23.63e-6), 1e-5);
  EXPECT_FALSE(j.at("cluster").at("comm_calibration").empty());
}

TEST(EstimateCli, BadInputExitsTwoWithOneLine) {
  const char* bad[] = {
      "estimate --model gpt2 --gpus 16 --system dgx-a100 --nodes 1",       // 16 ranks on one node of 8
      "estimate --model gpt2 --gpus 8 --system dgx-a100 --order tp-dp",     // not every dimension once
      "estimate --model gpt2 --gpus 8 --system dgx-a1000",                  // unknown system
      "estimate --params 7e9 --gpus 8 --system dgx-a100",                   // no architecture
      "estimate --model gpt2 --gpus 8 --system dgx-a100 --comm-calibration /nonexistent/cal.json",
  };
  for (const char* args : bad) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

// The global batch left out means micro-batch x dp, one microbatch a step (the option's help): the bounds of
// --explain must price that step, not an empty one.
TEST(EstimateCli, BoundsOfTheDefaultGlobalBatch) {
  auto bounds = [](const std::string& extra) {
    const auto r =
        run_cli("estimate --model llama-3.1-8b --system dgx-h100 --nodes 2 --zero 1 --tp 2 --explain --json " + extra);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out).at("bounds") : nlohmann::json::object();
  };
  const auto left_out = bounds(""), given = bounds("--global-batch 8");  // 16 GPUs / tp 2 = dp 8
  ASSERT_GT(given.at("compute_s").get<double>(), 0);
  for (const char* key : {"flops_per_gpu", "compute_s", "node_import_bytes", "network_s", "hbm_bytes_per_gpu"})
    EXPECT_DOUBLE_EQ(left_out.at(key).get<double>(), given.at(key).get<double>()) << key;
}
