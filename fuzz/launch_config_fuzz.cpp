// libFuzzer target: a launch configuration, given to the reader its text selects (read_launch_config without a
// file name: a ds_config.json, a torchtitan TOML, a NeMo recipe or override list, or a Megatron-LM launch script).
// Anything but InputError is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "framework/launch.hpp"
#include "gpuplan/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)gpuplan::framework::read_launch_config("launch-file", text);
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
