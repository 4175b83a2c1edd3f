#pragma once

// How much slower than the typical GPU the slowest of a job's GPUs runs.
//
// GPUs of one SKU do not run at one speed: under power management each chip settles at its own sustained clock,
// which manufacturing variation sets apart from its neighbours', and the difference persists from step to step.
// Synchronous training waits at every collective for its slowest rank, so a job of N GPUs runs at the pace of
// the slowest of N draws, while the efficiencies of data/perf.json and data/gemm/ were measured on one GPU, a
// typical draw.

namespace gpuplan::perf {

// The expected largest of `count` draws of a standard normal variable, in standard deviations: 0 for one draw,
// about 1.42 for 8, 2.5 for 100, 3.2 for 1000 (Blom's plotting position (count - 0.375) / (count + 0.25) through
// the inverse normal distribution).
double expected_largest_normal(double count);

// The share of its GPU time a job of `gpus` GPUs loses to its slowest GPU, when the GPUs' sustained speeds spread
// with relative standard deviation `speed_spread`.
inline double slowest_gpu_share(double gpus, double speed_spread) {
  return speed_spread * expected_largest_normal(gpus);
}

}  // namespace gpuplan::perf
