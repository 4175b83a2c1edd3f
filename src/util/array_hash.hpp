#pragma once
// A hash for fixed arrays of small integers (shape keys of the search's memos): each value folded in, then
// splitmix64's finalizer, because the keys differ in a few low bits and a table's buckets take the hash modulo
// their count.
#include <array>
#include <cstddef>
#include <cstdint>

namespace gpuplan::detail {

struct ArrayHash {
  template <std::size_t N>
  std::size_t operator()(const std::array<std::int64_t, N>& key) const {
    std::uint64_t hash = 0;
    for (const std::int64_t value : key) {
      hash = (hash ^ static_cast<std::uint64_t>(value)) * 0x9e3779b97f4a7c15ull;
      hash ^= hash >> 29;
    }
    hash ^= hash >> 31;
    hash *= 0xbf58476d1ce4e5b9ull;
    hash ^= hash >> 27;
    return static_cast<std::size_t>(hash);
  }
};

}  // namespace gpuplan::detail
