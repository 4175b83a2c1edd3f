// Reading nccl-tests outputs and fitting the model to them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"

namespace gpuplan {
namespace {

std::string data_file(const std::string& name) {
  const std::string path = std::string(GPUPLAN_TEST_DATA_DIR) + "/nccl-tests/a100-8gpu-allreduce/" + name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

NcclTestsLog lut(int n) {
  const std::string name = "AR_GPU" + std::to_string(n) + "_1M_1024M_LUT.csv";
  return parse_nccl_tests(data_file(name), name);
}

// Six measured rows of AR_GPU8_1M_1024M_LUT.csv laid out as all_reduce_perf (nccl-tests 2.13+) prints them:
// time in us, algbw = size / time, busbw = algbw x 2(8-1)/8.
const char* kAllReducePerf = R"(# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  31337 on     node01 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  31338 on     node01 device  1 [0x0f] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid  31339 on     node01 device  2 [0x47] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  31340 on     node01 device  3 [0x4e] NVIDIA A100-SXM4-80GB
#  Rank  4 Group  0 Pid  31341 on     node01 device  4 [0x87] NVIDIA A100-SXM4-80GB
#  Rank  5 Group  0 Pid  31342 on     node01 device  5 [0x90] NVIDIA A100-SXM4-80GB
#  Rank  6 Group  0 Pid  31343 on     node01 device  6 [0xb7] NVIDIA A100-SXM4-80GB
#  Rank  7 Group  0 Pid  31344 on     node01 device  7 [0xbd] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576       262144     float     sum      -1    92.79   11.30   19.78      0    92.15   11.38   19.91      0
     4194304      1048576     float     sum      -1    95.80   43.78   76.62      0    94.03   44.61   78.06      0
    16777216      4194304     float     sum      -1   232.40   72.19  126.33      0   231.00   72.63  127.10      0
    67108864     16777216     float     sum      -1   579.90  115.72  202.52      0   579.60  115.78  202.62      0
   268435456     67108864     float     sum      -1  2162.30  124.14  217.25      0  2158.00  124.39  217.68      0
  1073741824    268435456     float     sum      -1  8193.00  131.06  229.35      0  8196.40  131.00  229.25      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 145.7
#
)";

TEST(CalibParse, AllReducePerfText) {
  const NcclTestsLog log = parse_nccl_tests(kAllReducePerf, "all_reduce_perf.txt");
  EXPECT_EQ(log.collective, Collective::allreduce);
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.hosts, 1);
  ASSERT_EQ(log.rows.size(), 6u);
  EXPECT_DOUBLE_EQ(log.avg_busbw_GBps, 145.7);
  // Time is the mean of out-of-place and in-place: (8193.00 + 8196.40) / 2.
  EXPECT_NEAR(log.rows.back().time_us, 8194.7, 1e-9);
  EXPECT_NEAR(log.rows.back().busbw_GBps, 1073741824.0 / 8194.7e3 * 1.75, 1e-9);
  EXPECT_TRUE(log.warnings.empty());
}

TEST(CalibParse, OlderLayoutWithoutRootAndNaWrong) {
  // nccl-tests before the root column, run with -c 0 (no check: "N/A"), as all_gather_perf on 4 ranks.
  const char* text = R"(# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 0
#
#                                             out-of-place                       in-place
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)             (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
    33554432       2097152   float    400.0   83.89   62.91    N/A    400.0   83.89   62.91    N/A
   134217728       8388608   float   1200.0  111.85   83.89    N/A   1200.0  111.85   83.89    N/A
)";
  const NcclTestsLog log = parse_nccl_tests(text, "all_gather_perf.log");
  EXPECT_EQ(log.collective, Collective::allgather);
  EXPECT_EQ(log.ranks, 4);   // nGpus 4 and busbw/algbw = 3/4
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_NEAR(log.rows[1].algbw_GBps, 134217728.0 / 1200e3, 1e-9);
}

TEST(CalibParse, HeaderlessPasteAndMultiHost) {
  const char* text = R"(#  Rank  0 Group  0 Pid 1 on hostA device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 2 on hostB device  0 [0x07] NVIDIA H100 80GB HBM3
   268435456      67108864     float    none      -1   5600.0   47.93   23.97      0   5601.0   47.93   23.96      0
  1073741824     268435456     float    none      -1  21600.0   49.71   24.86      0  21610.0   49.69   24.84      0
)";
  const NcclTestsLog log = parse_nccl_tests(text, "reduce_scatter_perf-2node.out");
  EXPECT_EQ(log.collective, Collective::reducescatter);
  EXPECT_EQ(log.ranks, 2);
  EXPECT_EQ(log.hosts, 2);
  EXPECT_EQ(log.rows.size(), 2u);
}

TEST(CalibParse, VTrainLookupTable) {
  const NcclTestsLog log = lut(8);
  EXPECT_EQ(log.collective, Collective::allreduce);
  EXPECT_EQ(log.ranks, 8);
  ASSERT_EQ(log.rows.size(), 1024u);
  // Last row: 8193000 and 8196400 ns.
  EXPECT_NEAR(log.rows.back().time_us, 8194.7, 1e-9);
  EXPECT_NEAR(log.rows.back().busbw_GBps, 229.3, 0.1);
}

TEST(CalibParse, GarbageIsRejected) {
  for (const char* text : {"hello world\nthis is not a log\n", "", "{\"comm\": {}}",
                           "# size count type redop root time algbw busbw\n"}) {
    try {
      parse_nccl_tests(text, "junk.txt", Collective::allreduce);
      FAIL() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not an nccl-tests output"), std::string::npos) << e.what();
      EXPECT_EQ(e.field(), "junk.txt");
    }
  }
  // Columns that look like rows but whose algbw is not size/time.
  EXPECT_THROW(parse_nccl_tests("1048576 262144 float sum -1 10.0 99.0 99.0 0 10.0 99.0 99.0 0\n", "x.txt",
                                Collective::allreduce, 8),
               InputError);
}

TEST(CalibFit, RecoversMeasuredBusbwAndLatencyOnEightA100) {
  const CommCalibration cal = calibrate_comm({lut(8)}, 8);
  ASSERT_TRUE(cal.intra.fitted);
  EXPECT_FALSE(cal.inter.fitted);
  RecordProperty("bus_GBps", std::to_string(cal.intra.calibration.bus_GBps));
  RecordProperty("latency_us", std::to_string(cal.intra.calibration.latency_us));
  RecordProperty("mean_rel_error", std::to_string(cal.intra.mean_rel_error));
  // Large-size busbw measured 229.35 at 1 GiB; the 1 MiB floor is ~93 us.
  EXPECT_NEAR(cal.intra.calibration.bus_GBps, 229.35, 229.35 * 0.03);
  EXPECT_GT(cal.intra.calibration.latency_us, 60.0);
  EXPECT_LT(cal.intra.calibration.latency_us, 95.0);
  EXPECT_LT(cal.intra.mean_rel_error, 0.03);

  // Fed back into the fabric, the model now matches the measurements at both ends.
  Fabric f = fabric_from_cluster(make_cluster("dgx-a100", 1));
  apply_comm_overrides(f, comm_calibration_json(cal), "calibration.json");
  const auto big = collective_cost(f, Collective::allreduce, 1073741824.0, {8, 8, 1});
  const auto small = collective_cost(f, Collective::allreduce, 1048576.0, {8, 8, 1});
  EXPECT_NEAR(big.busbw_GBps, 229.35, 229.35 * 0.03);
  EXPECT_NEAR(small.time_s * 1e6, 92.79, 92.79 * 0.10);
  EXPECT_NE(big.algorithm.find("calibrated"), std::string::npos);
}

TEST(CalibFit, AllRankCountsTogether) {
  std::vector<NcclTestsLog> logs;
  for (int n = 2; n <= 8; ++n) logs.push_back(lut(n));
  const CommCalibration cal = calibrate_comm(logs, 8);
  ASSERT_TRUE(cal.intra.fitted);
  EXPECT_EQ(cal.intra.files, 7);
  // One bus bandwidth per rank count: the measured 1 GiB busbw of the 2-, 4- and 8-rank tables (197.28, 221.86,
  // 229.35 GB/s; the fit weighs every size, so within 3 %).
  const auto& by_ranks = cal.intra.calibration.bus_GBps_by_ranks;
  ASSERT_EQ(by_ranks.size(), 7u);
  EXPECT_NEAR(by_ranks.at(2), 197.28, 197.28 * 0.03);
  EXPECT_NEAR(by_ranks.at(4), 221.86, 221.86 * 0.03);
  EXPECT_NEAR(by_ranks.at(8), 229.35, 229.35 * 0.03);
  EXPECT_DOUBLE_EQ(cal.intra.calibration.bus_GBps, by_ranks.at(8));   // the largest group's
  // With the bandwidth free per rank count, the 1 MiB floors (44 / 52 / 93 us at 2 / 4 / 8 ranks) leave a
  // latency that grows with the ring's steps, which one bandwidth for all rank counts could not fit.
  EXPECT_GT(cal.intra.calibration.step_latency_us, 0.0);
  EXPECT_LT(cal.intra.mean_rel_error, 0.03);
  EXPECT_LT(cal.intra.max_rel_error, 0.30);
}

TEST(CalibFit, ABandwidthPerRankCountIsWrittenReadAndInterpolated) {
  // Two exact tables: 2 ranks at 100 GB/s busbw and 8 ranks at 200 GB/s, 10 us of latency each, sizes 1 and
  // 4 GiB. busbw factor of an all-reduce: 2(n-1)/n, 1 at 2 ranks and 1.75 at 8.
  auto table = [](int ranks, double bus_GBps) {
    NcclTestsLog log;
    log.origin = "ar" + std::to_string(ranks) + ".txt";
    log.ranks = ranks;
    const double factor = 2.0 * (ranks - 1) / ranks;
    for (const double size : {1073741824.0, 4294967296.0})
      log.rows.push_back({size, 10.0 + size * factor / (bus_GBps * 1e3)});
    return log;
  };
  const CommCalibration cal = calibrate_comm({table(2, 100.0), table(8, 200.0)}, 8);
  ASSERT_TRUE(cal.intra.fitted);
  EXPECT_NEAR(cal.intra.calibration.bus_GBps_by_ranks.at(2), 100.0, 1e-6);
  EXPECT_NEAR(cal.intra.calibration.bus_GBps_by_ranks.at(8), 200.0, 1e-6);

  // Read back: 4 ranks sit halfway between 2 and 8 on log2(ranks), so 150 GB/s; 3 ranks at log2(1.5) / 2 of the
  // way, 100 + 100 x 0.2925 = 129.25.
  Fabric f = fabric_from_cluster(make_cluster("dgx-a100", 1));
  apply_comm_overrides(f, comm_calibration_json(cal), "calibration.json");
  const double big = 8589934592.0;
  EXPECT_NEAR(collective_cost(f, Collective::allreduce, big, {2, 2, 1}).busbw_GBps, 100.0, 0.5);
  EXPECT_NEAR(collective_cost(f, Collective::allreduce, big, {4, 4, 1}).busbw_GBps, 150.0, 0.5);
  EXPECT_NEAR(collective_cost(f, Collective::allreduce, big, {3, 3, 1}).busbw_GBps,
              100.0 + 100.0 * std::log2(1.5) / 2.0, 0.5);
  EXPECT_NEAR(collective_cost(f, Collective::allreduce, big, {8, 8, 1}).busbw_GBps, 200.0, 0.5);
}

TEST(CalibFit, ALogOfOneRankIsRejected) {
  NcclTestsLog log;
  log.origin = "one.txt";
  log.ranks = 1;
  log.rows = {{1048576.0, 5.0}, {2097152.0, 6.0}};
  EXPECT_THROW(calibrate_comm({log}, 8), InputError);
}

TEST(CalibFit, LogsBeyondOneNodeFormTheInterTier) {
  // 16 ranks with 8 GPUs per node -> inter-node tier.
  const char* text = R"(#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   268435456      67108864     float     sum      -1   1500.0  178.96  335.54      0   1500.0  178.96  335.54      0
  1073741824     268435456     float     sum      -1   5800.0  185.13  347.11      0   5800.0  185.13  347.11      0
)";
  const NcclTestsLog log = parse_nccl_tests(text, "all_reduce_perf_16.txt", std::nullopt, 16);
  const CommCalibration cal = calibrate_comm({log}, 8);
  EXPECT_FALSE(cal.intra.fitted);
  ASSERT_TRUE(cal.inter.fitted);
  // Two points fit exactly: busbw from the slope, (1073741824 - 268435456) x 1.875 / (5800 - 1500) us.
  EXPECT_NEAR(cal.inter.calibration.bus_GBps, (1073741824.0 - 268435456.0) * 1.875 / 4300e3, 1e-6);
}

TEST(CalibOverrides, BadFilesAreRejected) {
  Fabric f = fabric_from_cluster(make_cluster("dgx-a100", 1));
  EXPECT_THROW(apply_comm_overrides(f, "not json", "x.json"), InputError);
  EXPECT_THROW(apply_comm_overrides(f, R"({"gpus": {}})", "x.json"), InputError);
  EXPECT_THROW(apply_comm_overrides(f, R"({"comm": {"intra": {"bus_GBps": -1}}})", "x.json"), InputError);
  EXPECT_THROW(apply_comm_overrides(f, R"({"comm": {"intro": {}}})", "x.json"), InputError);
  // Bandwidths per rank count: an array of {ranks >= 2, bus_GBps > 0}, each rank count once.
  for (const char* by_ranks : {R"({"ranks": 2})", R"(2)", R"({"ranks": 1, "bus_GBps": 10})",
                               R"({"ranks": 2, "bus_GBps": 0})", R"({"ranks": 2.5, "bus_GBps": 10})",
                               R"({"ranks": 2, "bus_GBps": 10, "x": 1})"})
    EXPECT_THROW(apply_comm_overrides(f, std::string(R"({"comm": {"intra": {"bus_GBps_by_ranks": [)") + by_ranks +
                                             "]}}}",
                                      "x.json"),
                 InputError)
        << by_ranks;
  EXPECT_THROW(apply_comm_overrides(f, R"({"comm": {"intra": {"bus_GBps_by_ranks": [{"ranks": 2, "bus_GBps": 1},
                                                                                   {"ranks": 2, "bus_GBps": 2}]}}})",
                                    "x.json"),
               InputError);
  EXPECT_THROW(apply_comm_overrides(f, R"({"comm": {"constants": {"no_such": 1}}})", "x.json"), InputError);
}

TEST(CalibOverrides, ConstantsCanBeOverridden) {
  Fabric f = fabric_from_cluster(make_cluster("dgx-a100", 1));
  const double before = collective_time_s(f, Collective::allreduce, 8.0, {8, 8, 1});
  // Ring and Tree LL base latencies 10 us higher (6.6 -> 16.6, 6.8 -> 16.8): the 8-byte allreduce, latency-bound,
  // gets 10 us slower.
  apply_comm_overrides(
      f, R"({"comm": {"constants": {"base_latency_us": {"ring": [16.6, 14.0, 8.4], "tree": [16.8, 14.0, 8.4]}}}})",
      "o.json");
  const double after = collective_time_s(f, Collective::allreduce, 8.0, {8, 8, 1});
  EXPECT_NEAR((after - before) * 1e6, 10.0, 0.3);
}

}  // namespace
}  // namespace gpuplan
