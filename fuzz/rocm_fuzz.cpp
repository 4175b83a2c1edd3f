// libFuzzer target: rocm-smi --showtopo and amd-smi topology, each followed by the analysis.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)gpuplan::analyze_topology(gpuplan::parse_rocm_smi_topo(text), {});
  } catch (const gpuplan::InputError&) {
  }
  try {
    (void)gpuplan::analyze_topology(gpuplan::parse_amd_smi_topology(text), {});
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
