#pragma once
// Internal to src/topology: the catalog the topology functions read.
#include "gpuplan/hardware.hpp"

namespace gpuplan::detail {

// `catalog` itself, or the built-in catalog (loaded once) when it is nullptr.
const HardwareCatalog& topology_catalog(const HardwareCatalog* catalog);

}  // namespace gpuplan::detail
