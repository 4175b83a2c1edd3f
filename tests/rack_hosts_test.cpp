// A node of several hosts: an NVL72 rack is one NVLink domain of 72 GPUs, but 18 compute trays, each its own
// operating system with 4 GPUs and 2 Grace CPUs (NVIDIA GB200 NVL72 datasheet: 36 Grace CPUs, up to 480 GB of
// LPDDR5X per Grace). Offloaded states live in one tray's memory, an offloaded optimizer step runs on that tray's
// CPUs, and a launcher starts 4 processes on each tray. Every expected value is derived here from the datasheet
// and the model's exact parameter count, not copied from the program's output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace rack_hosts_test {

// Llama-3.1-8B: 8,030,261,248 parameters (the Hugging Face checkpoint's count).
constexpr double kParams8B = 8030261248.0;
constexpr double kGpusPerTray = 4;               // 72 GPUs / 18 compute trays
constexpr double kTrayMemoryBytes = 2 * 480e9;   // 2 Grace CPUs of 480 GB each
constexpr double kCpuAdamParamsPerS = 4.0e9;     // data/perf.json cpu_adam_params_per_s: one host's rate

nlohmann::json json_of(const std::string& args) {
  const auto r = run_cli(args + " --json");
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  return nlohmann::json::parse(r.out);
}


TEST(RackHosts, OffloadedStatesAreCheckedAgainstOneComputeTray) {
  // ZeRO-3 over 8 GPUs with the optimizer offloaded: 4 B master + 8 B Adam moments + 4 B gradient = 16 B per
  // parameter of the rank's eighth. The 8 GPUs span two trays; each tray holds 4 of them.
  const auto j = json_of("memory --model llama-3.1-8b --system gb200-nvl72 --gpus 8 --framework deepspeed --zero 3 "
                         "--offload optimizer --seq-len 4096 --global-batch 8");
  const double per_gpu = kParams8B / 8 * 16;
  EXPECT_DOUBLE_EQ(j["host"]["total"].get<double>(), per_gpu);
  EXPECT_EQ(j["host"]["gpus_per_node"], 4);
  EXPECT_DOUBLE_EQ(j["host"]["needed_per_node"].get<double>(), kGpusPerTray * per_gpu);
  EXPECT_DOUBLE_EQ(j["host"]["capacity_per_node"].get<double>(), kTrayMemoryBytes);
  EXPECT_NE(run_cli("memory --model llama-3.1-8b --system gb200-nvl72 --gpus 8 --framework deepspeed --zero 3 "
                    "--offload optimizer --seq-len 4096 --global-batch 8")
                .out.find("Host (gb200-nvl72, one of its 18 hosts)"),
            std::string::npos);
}

TEST(RackHosts, AnOffloadedOptimizerStepSharesOneTraysCpus) {
  // ZeRO-1 over 8 data-parallel GPUs: each updates P / 8 parameters on the CPUs it shares with the 3 other GPUs of
  // its tray, so the step takes P / 8 x 4 / rate = 1.004 s (not the 72 GPUs of the rack, nor the 8 of the job).
  // The optimizer term also carries the updated bf16 weights' way back up the host link (2 B x P / 8 = 2 GB over
  // NVLink-C2C, about 10 ms): 2% covers it.
  const auto j = json_of("estimate --model llama-3.1-8b --system gb200-nvl72 --nodes 1 --gpus 8 --framework deepspeed "
                         "--zero 1 --offload optimizer --seq-len 4096 --global-batch 8");
  const double cpu_step_s = kParams8B / 8 * kGpusPerTray / kCpuAdamParamsPerS;
  const double optimizer_s = j["time"]["breakdown"]["optimizer"].get<double>();
  EXPECT_GE(optimizer_s, cpu_step_s);
  EXPECT_NEAR(optimizer_s, cpu_step_s, 0.02 * cpu_step_s);
}

TEST(RackHosts, LaunchFilesStartFourProcessesOnEachTray) {
  const std::string job = "estimate --model llama-3.1-8b --system gb200-nvl72 --nodes 1 --tp 2 --global-batch 72 ";
  const auto megatron = run_cli(job + "--emit megatron");
  ASSERT_EQ(megatron.status, 0) << megatron.err;
  EXPECT_NE(megatron.out.find("GPUS_PER_NODE=4\n"), std::string::npos) << megatron.out;
  EXPECT_NE(megatron.out.find("NUM_NODES=${NUM_NODES:-18}"), std::string::npos);
  const auto deepspeed = run_cli(job + "--framework deepspeed --emit deepspeed");
  ASSERT_EQ(deepspeed.status, 0) << deepspeed.err;
  EXPECT_NE(deepspeed.out.find("--num_nodes 18 --num_gpus 4 "), std::string::npos) << deepspeed.out;
  const auto nemo = run_cli(job + "--framework nemo --emit nemo");
  ASSERT_EQ(nemo.status, 0) << nemo.err;
  EXPECT_NE(nemo.out.find("trainer.devices=4"), std::string::npos) << nemo.out;
  EXPECT_NE(nemo.out.find("trainer.num_nodes=18"), std::string::npos);
}

}  // namespace rack_hosts_test
