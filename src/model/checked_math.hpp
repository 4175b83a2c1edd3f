#pragma once
// Integer arithmetic for parameter counts that refuses to overflow: a configuration large enough to overflow
// int64 (about 9.2e18 parameters) is an input error, never a silently wrapped number.
#include <cstdint>
#include <string>

#include "gpuplan/error.hpp"

namespace gpuplan::detail {

inline std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    throw InputError("model size", std::to_string(a) + " x " + std::to_string(b) + " overflows 64-bit counts",
                     "configurations with fewer than 9.2e18 parameters");
  return out;
}

inline std::int64_t mul(std::int64_t a, std::int64_t b, std::int64_t c) { return mul(mul(a, b), c); }

inline std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    throw InputError("model size", std::to_string(a) + " + " + std::to_string(b) + " overflows 64-bit counts",
                     "configurations with fewer than 9.2e18 parameters");
  return out;
}

template <typename... Rest>
std::int64_t add(std::int64_t a, std::int64_t b, Rest... rest) {
  return add(add(a, b), rest...);
}

}  // namespace gpuplan::detail
