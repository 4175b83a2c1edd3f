// libFuzzer target: the JSON files a user gives to override gpuplan's constants. The same text goes to the hardware
// catalog merge (--catalog), the compute-constant overlay (--perf), the communication overrides
// (--comm-calibration) and a cluster description (--topology given a JSON object). Whatever the bytes, each must
// end normally or with InputError; a failed catalog merge must leave the catalog as it was.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const gpuplan::Cluster node = gpuplan::make_cluster("dgx-h100", 2);
  gpuplan::HardwareCatalog catalog = gpuplan::HardwareCatalog::builtin();
  try {
    catalog.merge_json(text, "fuzz/catalog.json");
  } catch (const gpuplan::InputError&) {
    if (catalog.find_gpu("h100-sxm-80gb") == nullptr) __builtin_trap();
  }
  try {
    (void)gpuplan::perf_constants(node.gpu, {{"fuzz/perf.json", std::string(text)}});
  } catch (const gpuplan::InputError&) {
  }
  try {
    gpuplan::Fabric fabric = gpuplan::fabric_from_cluster(node);
    gpuplan::apply_comm_overrides(fabric, text, "fuzz/comm.json");
  } catch (const gpuplan::InputError&) {
  }
  try {
    (void)gpuplan::cluster_from_json(text, "fuzz/topology.json");
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
