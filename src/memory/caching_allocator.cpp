// The caching-allocator replay of caching_allocator.hpp.
#include "memory/caching_allocator.hpp"

#include <algorithm>
#include <stdexcept>

namespace gpuplan::memory {

namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr std::uint64_t kMinBlock = 512;           // kMinBlockSize
constexpr std::uint64_t kSmallSize = 1 * kMiB;     // largest request of the small pool
constexpr std::uint64_t kSmallBuffer = 2 * kMiB;   // small-pool segment
constexpr std::uint64_t kLargeBuffer = 20 * kMiB;  // large-pool segment for requests below kMinLargeAlloc
constexpr std::uint64_t kMinLargeAlloc = 10 * kMiB;
constexpr std::uint64_t kRoundLarge = 2 * kMiB;

std::uint64_t round_up(std::uint64_t value, std::uint64_t unit) { return (value + unit - 1) / unit * unit; }

std::uint64_t segment_size(std::uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(size, kRoundLarge);
}

}  // namespace

void CachingAllocator::add_free(std::size_t block) {
  blocks_[block].free = true;
  pool(blocks_[block].small).emplace(blocks_[block].size, blocks_[block].address, block);
}

void CachingAllocator::remove_free(std::size_t block) {
  pool(blocks_[block].small).erase({blocks_[block].size, blocks_[block].address, block});
}

std::size_t CachingAllocator::new_block(const Block& block) {
  if (unused_.empty()) {
    blocks_.push_back(block);
    return blocks_.size() - 1;
  }
  const std::size_t slot = unused_.back();
  unused_.pop_back();
  blocks_[slot] = block;
  return slot;
}

std::size_t CachingAllocator::new_segment(std::uint64_t size, bool small) {
  Block b;
  b.size = size;
  b.address = next_address_;
  b.small = small;
  next_address_ += size;
  reserved_ += size;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return new_block(b);
}

CachingAllocator::Handle CachingAllocator::allocate(std::uint64_t bytes) {
  const std::uint64_t size = std::max(kMinBlock, round_up(bytes, kMinBlock));
  const bool small = size <= kSmallSize;
  auto& free_blocks = pool(small);
  std::size_t block = kNone;
  if (auto it = free_blocks.lower_bound({size, 0, 0}); it != free_blocks.end()) {
    block = std::get<2>(*it);
    free_blocks.erase(it);
  } else {
    block = new_segment(segment_size(size), small);
  }
  const std::uint64_t rest = blocks_[block].size - size;
  if (small ? rest >= kMinBlock : rest > kSmallSize) {
    Block remainder;
    remainder.size = rest;
    remainder.address = blocks_[block].address + size;
    remainder.small = small;
    remainder.prev = block;
    remainder.next = blocks_[block].next;
    const std::size_t r = new_block(remainder);
    if (remainder.next != kNone) blocks_[remainder.next].prev = r;
    blocks_[block].next = r;
    blocks_[block].size = size;
    add_free(r);
  }
  blocks_[block].free = false;
  allocated_ += blocks_[block].size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return block;
}

// `absorbed` (the block after `kept` in its segment) joins `kept`.
void CachingAllocator::merge_into(std::size_t kept, std::size_t absorbed) {
  blocks_[kept].size += blocks_[absorbed].size;
  blocks_[kept].next = blocks_[absorbed].next;
  if (blocks_[absorbed].next != kNone) blocks_[blocks_[absorbed].next].prev = kept;
  blocks_[absorbed].size = 0;
  unused_.push_back(absorbed);
}

void CachingAllocator::release(Handle handle) {
  if (handle >= blocks_.size() || blocks_[handle].free) throw std::logic_error("CachingAllocator: bad release");
  std::size_t block = handle;
  allocated_ -= blocks_[block].size;
  if (const std::size_t next = blocks_[block].next; next != kNone && blocks_[next].free) {
    remove_free(next);
    merge_into(block, next);
  }
  if (const std::size_t prev = blocks_[block].prev; prev != kNone && blocks_[prev].free) {
    remove_free(prev);
    merge_into(prev, block);
    block = prev;
  }
  add_free(block);
}

}  // namespace gpuplan::memory
