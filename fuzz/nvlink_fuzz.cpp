// libFuzzer target: nvidia-smi nvlink -s, then applied to a fixed 8-GPU NVSwitch topology.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

namespace {
const char* kTopo =
    "\tGPU0\tGPU1\tGPU2\tGPU3\n"
    "GPU0\t X \tNV18\tNV2\tSYS\n"
    "GPU1\tNV18\t X \tNV18\tNV18\n"
    "GPU2\tNV2\tNV18\t X \tNV18\n"
    "GPU3\tSYS\tNV18\tNV18\t X \n";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    gpuplan::TopologyOptions opt;
    opt.nvlink_status = gpuplan::parse_nvlink_status(text);
    (void)gpuplan::analyze_topology(gpuplan::parse_nvidia_smi_topo(kTopo), opt);
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
