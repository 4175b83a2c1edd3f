// libFuzzer target: a bash launch script. Whatever the bytes, reading must end normally or with InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "framework/shell_script.hpp"
#include "gpuplan/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)gpuplan::framework::read_shell_script(text, "fuzz/train.sh", {{"SLURM_NNODES", "2"}});
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
