// Benchmarks of the memory model. Placeholder until the model lands.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
