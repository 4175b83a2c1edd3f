// A synchronous job runs at the pace of its slowest GPU: the expected largest of N draws of the GPUs' speed spread
// (src/perf/slowest_gpu.hpp), checked against the expectation integrated numerically here, and the term it adds
// to the step.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "gpuplan/estimate.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "perf/slowest_gpu.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace slowest_gpu_test {

using test::step_term;

// E[max of n standard normals] = integral of z n phi(z) Phi(z)^(n-1) dz, by the trapezoid rule on [-12, 12].
double integrated_largest_normal(int n) {
  const double step = 1e-4;
  double sum = 0;
  for (double z = -12; z <= 12; z += step) {
    const double density = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    const double below = 0.5 * std::erfc(-z / std::sqrt(2.0));
    sum += z * n * density * std::pow(below, n - 1) * step;
  }
  return sum;
}

TEST(SlowestGpu, ExpectedLargestNormalMatchesTheIntegral) {
  EXPECT_EQ(perf::expected_largest_normal(1), 0);
  // Two and three draws have closed forms: 1 / sqrt(pi) and 3 / (2 sqrt(pi)).
  EXPECT_NEAR(integrated_largest_normal(2), 1 / std::sqrt(std::numbers::pi), 1e-6);
  EXPECT_NEAR(integrated_largest_normal(3), 1.5 / std::sqrt(std::numbers::pi), 1e-6);
  // Blom's plotting position is within 5 % for two draws and within 1 % from ten on.
  for (int n : {2, 3}) EXPECT_NEAR(perf::expected_largest_normal(n) / integrated_largest_normal(n), 1, 0.05) << n;
  for (int n : {10, 64, 512, 4096})
    EXPECT_NEAR(perf::expected_largest_normal(n) / integrated_largest_normal(n), 1, 0.01) << n;
}

EstimateInputs llama_8b_on(int nodes, double speed_spread) {
  EstimateInputs in;
  in.memory.model = model_from_catalog("llama-3.1-8b");
  in.memory.training.seq_len = 4096;
  in.memory.training.global_batch = 8 * nodes;
  in.memory.layout.gpus = 8 * nodes;
  in.memory.layout.zero = 1;
  in.memory.overheads = default_overheads();
  test::place_on(in, "dgx-h100", nodes);
  in.perf = perf_constants(in.gpu, {{"test", R"({"defaults": {"gpu_speed_spread": )" +
                                                 std::to_string(speed_spread) + "}}"}});
  return in;
}

TEST(SlowestGpu, AddsTheSlowestOfTheJobsGpusShareOfItsGpuTime) {
  for (int nodes : {1, 16}) {
    const StepEstimate step = estimate_step(llama_8b_on(nodes, 0.02));
    const double gpu_time = step_term(step, "forward") + step_term(step, "backward") + step_term(step, "recompute");
    const double expected = 0.02 * integrated_largest_normal(8 * nodes) * gpu_time;
    EXPECT_NEAR(step_term(step, "slowest_gpu"), expected, 0.01 * expected) << nodes << " nodes";
  }
}

TEST(SlowestGpu, AHostBoundJobWaitsForItsHostInstead) {
  // 10 ms of dispatch per kernel: the host, not the GPUs, sets the pace, and its slack hides the slowest GPU.
  EstimateInputs in = llama_8b_on(1, 0.02);
  in.perf = perf_constants(in.gpu, {{"test", R"({"defaults": {"gpu_speed_spread": 0.02, "host_op_s": 0.01}})"}});
  const StepEstimate step = estimate_step(in);
  EXPECT_GT(step_term(step, "host_bound"), 0);
  EXPECT_EQ(step_term(step, "slowest_gpu"), 0);
}

TEST(SlowestGpu, NoSpreadOrOneGpuAddsNothing) {
  EXPECT_EQ(step_term(estimate_step(llama_8b_on(2, 0)), "slowest_gpu"), 0);
  EstimateInputs one = llama_8b_on(1, 0.02);
  one.memory.layout.gpus = 1;
  one.memory.training.global_batch = 1;
  one.memory.training.seq_len = 1024;
  EXPECT_EQ(step_term(estimate_step(one), "slowest_gpu"), 0);
}

}  // namespace slowest_gpu_test
}  // namespace gpuplan
