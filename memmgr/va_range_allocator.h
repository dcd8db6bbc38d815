// VaRangeAllocator: first-fit placement of ranges inside one reserved virtual-address region.
//
// It only does arithmetic on addresses; it maps nothing. Free space is kept as a
// set of maximal intervals (adjacent free intervals are always coalesced), so a
// range that was handed out and given back leaves the free space exactly as it was.
//
// Invariants: every range handed out lies inside the region, starts at a multiple
// of the alignment (relative to address 0) and never overlaps another live range.
// Thread-safety: none; the owner serializes calls (MemoryManager holds its mutex).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "memmgr/address_layout.h"

namespace agileos::memmgr {

class VaRangeAllocator {
 public:
  // `region.begin` and `region.size` must be multiples of `alignment`, a power of two.
  VaRangeAllocator(Region region, std::uint64_t alignment);

  // The lowest free range of `size` bytes, or nullopt when `size` is zero, not a
  // multiple of the alignment, or no free interval is large enough. O(free intervals).
  std::optional<DevicePtr> allocate(std::uint64_t size);

  // Gives back [base, base+size). Returns false, and changes nothing, unless the
  // range is aligned, inside the region and entirely allocated (a release that would
  // double-free or overlap free space is a caller bug and is refused).
  bool release(DevicePtr base, std::uint64_t size);

  std::uint64_t freeBytes() const { return freeBytes_; }
  std::size_t freeIntervalCount() const { return freeByBase_.size(); }
  const Region& region() const { return region_; }

 private:
  Region region_;
  std::uint64_t alignment_;
  std::map<DevicePtr, std::uint64_t> freeByBase_;  // base -> size; maximal, non-adjacent intervals
  std::uint64_t freeBytes_;
};

}  // namespace agileos::memmgr
