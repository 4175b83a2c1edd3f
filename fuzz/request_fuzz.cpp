// libFuzzer target: a request as JSON, what the Python module and the web page send. The first byte picks the
// question. Every request must read into its type or fail with InputError; what reads must write back to JSON that
// reads to the same request; and the cheap questions must answer or fail with InputError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

namespace {

template <typename Request>
void round_trip(const nlohmann::json& json, bool answer) {
  const Request request = gpuplan::api::from_json<Request>(json);
  const nlohmann::ordered_json written = gpuplan::api::to_json(request);
  if (!(gpuplan::api::from_json<Request>(nlohmann::json::parse(written.dump())) == request)) std::abort();
  if (answer) (void)gpuplan::api::to_json(gpuplan::api::run(request));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const nlohmann::json json = nlohmann::json::parse(data + 1, data + size, nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    switch (data[0] % 8) {
      case 0: round_trip<gpuplan::api::ModelRequest>(json, true); break;
      case 1: round_trip<gpuplan::api::MemoryRequest>(json, true); break;
      case 2: round_trip<gpuplan::api::EstimateRequest>(json, false); break;
      case 3: round_trip<gpuplan::api::PlanRequest>(json, false); break;
      case 4: round_trip<gpuplan::api::CommRequest>(json, true); break;
      case 5: round_trip<gpuplan::api::CalibrateRequest>(json, false); break;
      case 6: round_trip<gpuplan::api::TopoRequest>(json, true); break;
      default: round_trip<gpuplan::api::CatalogRequest>(json, true); break;
    }
  } catch (const gpuplan::InputError&) {
  }
  return 0;
}
