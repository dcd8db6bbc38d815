// ManagedAddresses: where the worker places managed segments (cudaMallocManaged) in its managed
// window (memmgr::kManagedWindow; worker/handlers/host_memory_handlers.cpp).
//
// A bump allocator: each segment gets the next address, on a kAlignment boundary, with at least
// kGap bytes after it that no segment takes (an overrun faults rather than reaching the next
// segment). At the window's end it starts again from the beginning: only address space is reused,
// and the caller maps with MAP_FIXED_NOREPLACE, so a new segment never overlaps a live one. After
// an address turns out to be taken (something of the process lies there) skipPast moves the
// cursor kCollisionSkip beyond it, so a large foreign range is not stepped through.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>

#include "memmgr/address_layout.h"

namespace agileos::worker {

class ManagedAddresses {
 public:
  static constexpr std::uint64_t kAlignment = 2ull << 20;
  static constexpr std::uint64_t kGap = 64ull << 10;
  static constexpr std::uint64_t kCollisionSkip = 64ull << 30;

  explicit ManagedAddresses(memmgr::Region window) : window_(window), next_(window.begin) {}

  // An address for `bytes` (> 0), or 0 when a segment that large cannot fit in the window.
  std::uint64_t take(std::uint64_t bytes) {
    if (bytes == 0 || bytes > window_.size - kGap) return 0;
    const std::uint64_t span = (bytes + kGap + kAlignment - 1) / kAlignment * kAlignment;
    if (span > window_.size) return 0;
    std::uint64_t at = next_.load();
    std::uint64_t taken = 0;
    do {
      taken = at < window_.begin || at > window_.end() || span > window_.end() - at ? window_.begin : at;
    } while (!next_.compare_exchange_weak(at, taken + span));
    return taken;
  }

  // `at` (from take) was found taken: later addresses start kCollisionSkip past it.
  void skipPast(std::uint64_t at) {
    const std::uint64_t target = at + kCollisionSkip;
    std::uint64_t next = next_.load();
    while (next < target && !next_.compare_exchange_weak(next, target)) {
    }
  }

 private:
  const memmgr::Region window_;
  std::atomic<std::uint64_t> next_;
};

}  // namespace agileos::worker
