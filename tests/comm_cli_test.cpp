// `gpuplan comm` as a user runs it: nccl-tests definitions in the JSON, calibration round trip, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {
const std::string kData = GPUPLAN_TEST_DATA_DIR;
const std::string kAllReduce8 = kData + "/nccl-tests/a100-8gpu-allreduce/AR_GPU8_1M_1024M_LUT.csv";
}  // namespace

TEST(CommCli, JsonFollowsNcclTestsDefinitions) {
  const auto r = run_cli("comm allreduce --size 1GiB --ranks 8 --system dgx-a100 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double t = j.at("time_s"), algbw = j.at("algbw_GBps"), busbw = j.at("busbw_GBps");
  EXPECT_FALSE(j.at("algorithm").get<std::string>().empty());
  // nccl-tests doc/PERFORMANCE.md: algbw = S / t; allreduce busbw = algbw x 2(n - 1)/n.
  EXPECT_NEAR(algbw, 1073741824.0 / t / 1e9, 1e-6 * algbw);
  EXPECT_NEAR(busbw, algbw * 2.0 * 7.0 / 8.0, 1e-6 * busbw);
  // The 8x A100 measurement at 1 GiB (vTrain AR_GPU8 table): 8,193,000 ns, busbw 229.35 GB/s. The uncalibrated
  // model must land within 15% of it.
  EXPECT_NEAR(busbw, 229.35, 0.15 * 229.35);
}

TEST(CommCli, SweepPrintsOneRowPerPowerOfTwo) {
  const auto r = run_cli("comm allgather --size 1MiB:8MiB --ranks 8 --system dgx-h100 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("results").size(), 4u);  // 1, 2, 4, 8 MiB
  EXPECT_DOUBLE_EQ(j.at("results")[3].at("size_bytes").get<double>(), 8.0 * 1024 * 1024);
}

TEST(CommCli, CalibrationReproducesTheMeasurement) {
  const std::string out = testing::TempDir() + "gpuplan_comm_cal.json";
  const auto fit = run_cli("comm --calibrate " + kAllReduce8 + " --out " + out);
  ASSERT_EQ(fit.status, 0) << fit.err;
  const auto r = run_cli("comm allreduce --size 1073741824 --ranks 8 --system dgx-a100 --comm-calibration " + out +
                         " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  // Measured (same table): 8,193,000 ns at 1 GiB. Calibrated, within 3%.
  EXPECT_NEAR(nlohmann::json::parse(r.out).at("time_s").get<double>(), 8.193e-3, 0.03 * 8.193e-3);
}

TEST(CommCli, BadInputIsOneLineAndExitTwo) {
  struct Case { std::string args; const char* must_mention; };
  const Case cases[] = {
      {"comm allreduce --size big --ranks 8 --system dgx-a100", "--size"},
      {"comm allreduce --size 1GB --ranks 64 --system dgx-a100 --nodes 2", "--ranks"},
      {"comm allreduce --size 1GB --ranks 8 --system dgx-a1000", "dgx-a100"},
      {"comm allreduce --size 1GB --ranks 0 --system dgx-a100", "--ranks"},
      {"comm --calibrate " + kData + "/topo/04_2gpu_pcie-only_phb_consumer.txt", "nccl-tests"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.must_mention), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}
