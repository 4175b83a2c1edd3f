// libFuzzer target: the measurements a user brings to calibrate. The same text goes to the nccl-tests reader
// (--calibrate: all_reduce_perf tables, vTrain's comma-separated lookup tables) and to the reader of measured runs
// (--runs: a CSV table, or a Megatron-LM log when it holds the arguments block). Whatever the bytes, each must end
// normally or with InputError.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/measured_runs.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)gpuplan::parse_nccl_tests(text, "fuzz/AR_GPU8_1M_1024M_LUT.csv");
  } catch (const gpuplan::InputError&) {
  }
  try {
    const gpuplan::api::FileInput file{"fuzz/runs.csv", std::string(text)};
    (void)gpuplan::api::detail::read_runs(file, gpuplan::api::CalibrateRequest{});
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
