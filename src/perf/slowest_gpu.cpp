#include "perf/slowest_gpu.hpp"

#include <cmath>

namespace gpuplan::perf {

namespace {

// The standard normal quantile of an upper-tail probability `tail` in (0, 0.5]: the rational approximation of
// Abramowitz and Stegun, Handbook of Mathematical Functions, 26.2.23 (absolute error below 4.5e-4), which costs
// one logarithm where bisection on erfc would cost dozens of calls for every estimate.
double upper_tail_quantile(double tail) {
  const double t = std::sqrt(-2.0 * std::log(tail));
  const double numerator = 2.515517 + t * (0.802853 + t * 0.010328);
  const double denominator = 1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308));
  return t - numerator / denominator;
}

}  // namespace

double expected_largest_normal(double count) {
  if (!(count > 1)) return 0;
  const double plotting_position = (count - 0.375) / (count + 0.25);
  return upper_tail_quantile(1.0 - plotting_position);
}

}  // namespace gpuplan::perf
