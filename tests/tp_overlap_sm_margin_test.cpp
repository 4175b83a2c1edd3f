// TP overlap with Transformer Engine's userbuffers: the reduce-scatter pipelined into each row-parallel forward
// GEMM runs on SMs taken from that GEMM (set_sm_margin), so those GEMMs run on the rest. Checked against a hand
// derivation from the measured B200 GEMM table, and for where the term must be absent.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "cli_runner.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

// Llama-3 70B cut to 12 layers on one 8x B200 node: tp 8, sequence 4096, 4 microbatches of 1, no recomputation.
EstimateInputs llama_b200(std::int64_t tp) {
  EstimateInputs in;
  in.memory.model = model_from_catalog("llama-3.1-70b");
  in.memory.model->layers = 12;
  in.memory.training.seq_len = 4096;
  in.memory.training.micro_batch = 1;
  in.memory.training.global_batch = 4 * (8 / tp);
  in.memory.layout.gpus = 8;
  in.memory.layout.tp = tp;
  in.memory.layout.sequence_parallel = tp > 1;
  in.memory.layout.zero = 1;
  in.memory.overheads = default_overheads();
  test::place_on(in, "dgx-b200", 1);
  in.time.tp_overlap = true;
  return in;
}

double tp_comm_with_reserved(EstimateInputs in, double reserved_sms) {
  in.perf = perf_constants(in.gpu, {{"test", R"({"defaults": {"tp_overlap_reserved_sms": )" +
                                                 std::to_string(reserved_sms) + "}}"}});
  for (const TimeTerm& t : estimate_step(in).breakdown)
    if (t.name == "tp_comm") return t.seconds;
  return -1;
}

TEST(TpOverlapSmMargin, SlowsTheRowParallelForwardGemmsByTheReservedShare) {
  // At tp 8 the attention output projection is a 4096 x 8192 x 1024 GEMM (rows, outputs, inputs) and the MLP
  // down projection 4096 x 8192 x 3584 (28672 / 8): both are measured shapes of data/gemm/b200-bf16.json, forward
  // efficiency 0.617 and 0.5034 of the 2250 TFLOP/s bf16 peak, each kernel plus kernel_overhead_s (5 us). With 16
  // of B200's 148 SMs reserved they take 148 / 132 of that; 12 layers, 4 microbatches.
  const double peak = 2250e12, overhead = 5e-6;
  const double projection = 2.0 * 4096 * 8192 * 1024 / (peak * 0.617) + overhead;
  const double down = 2.0 * 4096 * 8192 * 3584 / (peak * 0.5034) + overhead;
  const double expected = 4 * 12 * (projection + down) * 16.0 / (148 - 16);
  const EstimateInputs in = llama_b200(8);
  EXPECT_NEAR(tp_comm_with_reserved(in, 16) - tp_comm_with_reserved(in, 0), expected, 1e-6 * expected);
  // The default is Transformer Engine's 16 SMs for its 'pipeline' overlap.
  EstimateInputs defaults = in;
  defaults.perf.reset();
  EXPECT_NEAR(estimate_step(defaults).step_s - [&] {
    EstimateInputs none = in;
    none.perf = perf_constants(in.gpu, {{"test", R"({"defaults": {"tp_overlap_reserved_sms": 0}})"}});
    return estimate_step(none).step_s;
  }(), expected, 1e-6 * expected);
}

// A job's own overlap configuration (--tp-overlap-sms, the userbuffers num_sm of its recipe) replaces the default
// whatever the perf constants say.
TEST(TpOverlapSmMargin, TheJobsOwnSmCountReplacesTheDefault) {
  EstimateInputs own = llama_b200(8);
  own.time.tp_overlap_sms = 16;
  EXPECT_DOUBLE_EQ(tp_comm_with_reserved(own, 0), tp_comm_with_reserved(llama_b200(8), 16));
  own.time.tp_overlap_sms = 0;
  EXPECT_DOUBLE_EQ(tp_comm_with_reserved(own, 40), tp_comm_with_reserved(llama_b200(8), 0));
  // From the command line: 16 SMs of 148 slow the two row-parallel forward GEMMs by 16 / 132 (the derivation
  // above), over the whole step.
  const std::string job = "estimate --model llama-3.1-70b --layers 12 --system dgx-b200 --nodes 1 --tp 8 "
                          "--sequence-parallel --seq-len 4096 --micro-batch 1 --global-batch 4 --tp-overlap --json";
  const auto sixteen = test::run_cli(job + " --tp-overlap-sms 16"), none = test::run_cli(job + " --tp-overlap-sms 0");
  ASSERT_EQ(sixteen.status, 0) << sixteen.err;
  ASSERT_EQ(none.status, 0) << none.err;
  const double projection = 2.0 * 4096 * 8192 * 1024 / (2250e12 * 0.617) + 5e-6;
  const double down = 2.0 * 4096 * 8192 * 3584 / (2250e12 * 0.5034) + 5e-6;
  const double expected = 4 * 12 * (projection + down) * 16.0 / (148 - 16);
  const double step = nlohmann::json::parse(sixteen.out).at("time").at("step_s").get<double>() -
                      nlohmann::json::parse(none.out).at("time").at("step_s").get<double>();
  EXPECT_NEAR(step, expected, 1e-4 * expected);
  const auto every = test::run_cli(job + " --tp-overlap-sms 148");
  EXPECT_EQ(every.status, 2);
  EXPECT_NE(every.err.find("--tp-overlap-sms: 148"), std::string::npos) << every.err;  // the field as the CLI names it
  EXPECT_NE(every.err.find("sm_count 148"), std::string::npos) << every.err;
}

TEST(TpOverlapSmMargin, AbsentWithoutTpOverlapOrWithoutTp) {
  EstimateInputs exposed = llama_b200(8);
  exposed.time.tp_overlap = false;
  EXPECT_DOUBLE_EQ(tp_comm_with_reserved(exposed, 40), tp_comm_with_reserved(exposed, 0));
  const EstimateInputs no_tp = llama_b200(1);
  EXPECT_DOUBLE_EQ(tp_comm_with_reserved(no_tp, 40), tp_comm_with_reserved(no_tp, 0));
  EXPECT_DOUBLE_EQ(tp_comm_with_reserved(no_tp, 0), 0.0);
}

TEST(TpOverlapSmMargin, ReservingEverySmIsAnInputError) {
  const EstimateInputs in = llama_b200(8);
  try {
    perf_constants(in.gpu, {{"test", R"({"defaults": {"tp_overlap_reserved_sms": 148}})"}});
    FAIL() << "148 of 148 SMs reserved was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tp_overlap_reserved_sms"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sm_count"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpuplan
