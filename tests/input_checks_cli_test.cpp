// One rule for every option: each bad value below gives one line naming the flag, the value and what is
// accepted, with exit status 2; what is valid is accepted however the number is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

// The run fails with status 2 and one line that names `flag` and contains `says`.
void expect_input_error(const std::string& args, const std::string& flag, const std::string& says) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.err.find("gpuplan: error: " + flag + ":"), 0u) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

const std::string kPlan = "plan --model llama-3.1-8b --system dgx-h100 --global-batch 64 ";
const std::string kMemory = "memory --model llama-3.1-8b --gpus 8 ";

}  // namespace

TEST(InputChecks, CountsAndDegreesOutOfRange) {
  expect_input_error(kPlan + "--nodes -1", "--nodes", "an integer from 1 to 1000000");
  expect_input_error(kPlan + "--max-tp 0", "--max-tp", "an integer >= 1");
  expect_input_error(kPlan + "--max-tp -3", "--max-tp", "an integer >= 1");
  expect_input_error("comm allreduce --size 1GiB --ranks 0 --system dgx-h100", "--ranks",
                     "0; accepted: an integer >= 1");
  expect_input_error("comm allreduce --size 1GiB --ranks 8 --system dgx-h100 --nodes 0", "--nodes", "from 1");
  expect_input_error(kMemory + "--allocator-factor 0", "--allocator-factor", "a number from 1 to 3");
  expect_input_error(kMemory + "--tp 0", "--tp", "an integer from 1 to 65536");
}

// A layout larger than the cluster: tp 8 x pp 8 = 64 GPUs on one 8-GPU node, counted in words a reader parses.
TEST(InputChecks, ALayoutLargerThanTheClusterSaysBoth) {
  expect_input_error("estimate --model llama-3.1-70b --system dgx-h100 --nodes 1 --tp 8 --pp 8", "--gpus",
                     "64 (tp x pp x cp x dp); accepted: at most 8 (1 node x 8 GPUs per node)");
}

TEST(InputChecks, NumbersSayWhatIsAccepted) {
  expect_input_error(kMemory + "--tp abc", "--tp", "'abc' is not a number; accepted: a whole number");
  expect_input_error(kMemory + "--dropout x", "--dropout", "accepted: a number");
  // One syntax for every count: exponent notation is as good as digits when the value is whole.
  EXPECT_EQ(run_cli("memory --model llama-3.1-8b --seq-len 1e4").status, 0);
  EXPECT_EQ(run_cli("memory --params 1e6").status, 0);
  expect_input_error(kMemory + "--seq-len 1.5", "--seq-len", "'1.5' is not a whole number; accepted: a whole number");
}

TEST(InputChecks, OptionsThatWouldBeIgnored) {
  expect_input_error("estimate --model llama-3.1-8b --system dgx-h100 --nic-GBps -5", "--nic-GBps", "a number > 0");
  expect_input_error("estimate --model llama-3.1-8b --system dgx-h100 --nic-GBps 50", "--nic-GBps",
                     "only with --topology");
  expect_input_error(kMemory + "--etp 2", "--etp", "needs a mixture-of-experts model");
}

// Volta's tensor cores multiply fp16 only; bf16 came with Ampere (NVIDIA A100 Tensor Core GPU Architecture
// whitepaper, "TF32 and BF16"). The default bf16 on a V100 is the precision's error, naming what the GPU has.
TEST(InputChecks, APrecisionTheGpuHasNoPeakFor) {
  const std::string v100 = "--model llama-3.1-8b --system dgx-1-v100 ";
  expect_input_error("estimate " + v100, "--precision", "bf16 on v100-sxm-32gb");
  expect_input_error("estimate " + v100, "--precision", "accepted: fp32, fp16");
  expect_input_error("estimate " + v100 + "--precision fp8", "--precision", "it runs as bf16 there");
  expect_input_error("plan " + v100 + "--global-batch 64", "--precision", "bf16 on v100-sxm-32gb");
  EXPECT_EQ(run_cli("estimate " + v100 + "--precision fp16").status, 0);
  EXPECT_EQ(run_cli("plan " + v100 + "--global-batch 64 --precision fp16").status, 0);
}

TEST(InputChecks, SizesNeedTheirUnit) {
  expect_input_error(kMemory + "--gpu-memory 80", "--gpu-memory", "a size with its unit");
  EXPECT_EQ(run_cli(kMemory + "--gpu-memory 80GB").status, 0);
}

TEST(InputChecks, CatalogNamesAreNamedAsTheirOption) {
  expect_input_error("catalog gpus h100", "NAME", "did you mean");
  // A name of another kind says what it is: a GPU given as the system, a system given as the GPU.
  expect_input_error("estimate --model llama-3.1-8b --system h100-sxm-80gb", "--system",
                     "h100-sxm-80gb is a GPU (gpuplan catalog gpus)");
  expect_input_error("estimate --model llama-3.1-8b --system dgx-h100 --gpu dgx-b200", "--gpu",
                     "dgx-b200 is a system (gpuplan catalog systems)");
  expect_input_error("comm sendrecv --size 1GB --ranks 8 --system dgx-1-v100 --nodes 2 --ranks-per-node 1", "--ranks",
                     "at most 2 on 2x dgx-1-v100 (2 nodes x 1 rank per node)");
}

TEST(InputChecks, AFolderWhereAFileIsExpected) {
  const std::string dir = std::string(GPUPLAN_TEST_DATA_DIR) + "/topo";
  expect_input_error("topo " + dir, "FILE", "(a directory)");
  expect_input_error("topo " + dir + "/01_dgx-a100_nv12_10nic_tabs.txt --nvlink " + dir, "--nvlink", "(a directory)");
  expect_input_error(kMemory + "--catalog " + dir, "--catalog", "(a directory)");
  expect_input_error("estimate --model llama-3.1-8b --topology " + dir + " --gpu h100-sxm-80gb", "--topology",
                     "(a directory)");
  expect_input_error("comm --calibrate " + dir, "--calibrate", "(a directory)");
  expect_input_error("estimate --model llama-3.1-8b --system dgx-h100 --perf " + dir, "--perf", "(a directory)");
  expect_input_error("estimate --model llama-3.1-8b --system dgx-h100 --comm-calibration " + dir,
                     "--comm-calibration", "(a directory)");
  // A folder without a config.json is named as such, not as a missing file.
  expect_input_error("model " + dir, "--model", "a folder without a config.json");
}

// nvidia-smi topo -m names no GPU model: the compute needs --gpu. The links suggest one as `gpuplan topo` infers
// it: 12 NVLinks per GPU pair on a DGX A100 (NV12); PCIe only suggests nothing.
TEST(InputChecks, ATopologyWithoutGpuSaysWhatItsLinksSuggest) {
  const std::string dir = std::string(GPUPLAN_TEST_DATA_DIR) + "/topo/";
  expect_input_error("estimate --model llama-3.1-8b --topology " + dir + "01_dgx-a100_nv12_10nic_tabs.txt", "--gpu",
                     "its links suggest --gpu a100-sxm-80gb (inferred from NV12");
  expect_input_error("plan --model llama-3.1-8b --global-batch 64 --topology " + dir + "01_dgx-a100_nv12_10nic_tabs.txt",
                     "--gpu", "its links suggest --gpu a100-sxm-80gb");
  const auto pcie = run_cli("estimate --model llama-3.1-8b --topology " + dir + "04_2gpu_pcie-only_phb_consumer.txt");
  EXPECT_EQ(pcie.status, 2);
  EXPECT_EQ(pcie.err.find("suggest"), std::string::npos) << pcie.err;
  EXPECT_EQ(run_cli("estimate --model llama-3.1-8b --topology " + dir + "01_dgx-a100_nv12_10nic_tabs.txt --gpu "
                    "a100-sxm-80gb").status, 0);
}

// The command line names request fields by their flags ("layout.gpu" -> "--gpu"), but not inside a catalog entry's
// hyphenated name: "gpus.my-gpu" stays as the user wrote it (it printed "gpus.my---gpu").
TEST(InputChecks, ACatalogEntryNameKeepsItsSpelling) {
  const std::string path = "/tmp/gpuplan_input_checks_catalog.json";
  {
    std::ofstream out(path);
    out << R"({"gpus": {"my-gpu": {"vendor": "nvidia", "source": "a test"}}})";
  }
  const auto r = run_cli("memory --model llama-3.1-8b --catalog " + path + " --gpu my-gpu");
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(path + ": gpus.my-gpu: missing description,"), std::string::npos) << r.err;
}

TEST(InputChecks, NoHintToDropAFlagThatWasNotGiven) {
  const auto r = run_cli("plan --model llama-3.1-405b --system dgx-a100 --nodes 1 --seq-len 131072 --global-batch 16 "
                         "--threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(r.out.find("Nothing fits"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--no-offload"), std::string::npos) << r.out;
  const auto without = run_cli("plan --model llama-3.1-405b --system dgx-a100 --nodes 1 --seq-len 131072 "
                               "--global-batch 16 --threads 1 --no-offload");
  EXPECT_NE(without.out.find("drop --no-offload"), std::string::npos) << without.out;
}

TEST(InputChecks, WarnsWhenTheSequenceIsLongerThanTheModelsPositions) {
  // GPT-2 has 1024 learned positions (n_positions in its config.json).
  const auto r = run_cli("memory --model gpt2 --seq-len 2048");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Warning: the sequence (2048 tokens) is longer than gpt2's maximum positions (1024)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run_cli("memory --model gpt2 --seq-len 1024").out.find("Warning"), std::string::npos);
}

TEST(InputChecks, AnEndlessFileIsRefused) {
  // A device that never ends (or a disk image given by mistake) stops at 64 MiB with a message, not a hang.
  expect_input_error("topo /dev/zero", "FILE", "more than 64 MiB");
}
