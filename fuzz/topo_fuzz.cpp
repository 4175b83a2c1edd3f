// libFuzzer target: nvidia-smi topo -m (and format detection) followed by the analysis. Only InputError may escape
// the parser; anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuplan::Topology t = gpuplan::parse_topology(text);
    (void)gpuplan::analyze_topology(t, {});
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
