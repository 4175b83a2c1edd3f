// PyTorch's CUDA caching allocator, replayed: which segments (cudaMalloc) an allocation sequence makes it reserve.
// The rules are those of c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x, default settings: no max_split_size, no
// expandable segments, one stream):
//  - a request is rounded up to a multiple of 512 B;
//  - up to 1 MiB it comes from the small pool, whose segments are 2 MiB; larger from the large pool, whose segments
//    are 20 MiB below 10 MiB and the request rounded up to 2 MiB from 10 MiB on;
//  - a request takes the smallest free block of its pool that is large enough (best fit, lowest address first);
//  - the rest of a block is split off as a free block when it is at least 512 B (small pool) or more than 1 MiB
//    (large pool);
//  - a freed block merges with free neighbours of its segment; segments are never returned (no empty_cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

namespace gpuplan::memory {

class CachingAllocator {
 public:
  using Handle = std::size_t;
  Handle allocate(std::uint64_t bytes);
  void release(Handle handle);
  std::uint64_t reserved() const { return reserved_; }
  std::uint64_t allocated() const { return allocated_; }
  std::uint64_t peak_reserved() const { return peak_reserved_; }     // torch.cuda.max_memory_reserved
  std::uint64_t peak_allocated() const { return peak_allocated_; }   // torch.cuda.max_memory_allocated

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Block {
    std::uint64_t size = 0, address = 0;
    std::size_t prev = kNone, next = kNone;   // neighbours in the same segment
    bool small = false, free = true;
  };
  using PoolKey = std::tuple<std::uint64_t, std::uint64_t, std::size_t>;   // size, address, block
  std::set<PoolKey>& pool(bool small) { return small ? small_pool_ : large_pool_; }
  void add_free(std::size_t block);
  void remove_free(std::size_t block);
  std::size_t new_segment(std::uint64_t size, bool small);
  void merge_into(std::size_t kept, std::size_t absorbed);

  std::size_t new_block(const Block& block);   // reuses the slot of a block merged away
  std::vector<Block> blocks_;
  std::vector<std::size_t> unused_;
  std::set<PoolKey> small_pool_, large_pool_;
  std::uint64_t next_address_ = 0;
  std::uint64_t reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
};

}  // namespace gpuplan::memory
