// libFuzzer target: Hugging Face config.json text. Malformed JSON and bad fields must come back as InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)gpuplan::model_from_hf_config(text, "fuzz/config.json");
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
