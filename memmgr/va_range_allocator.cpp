#include "memmgr/va_range_allocator.h"

#include <iterator>

namespace agileos::memmgr {

VaRangeAllocator::VaRangeAllocator(Region region, std::uint64_t alignment)
    : region_(region), alignment_(alignment), freeBytes_(region.size) {
  if (region.size > 0) freeByBase_.emplace(region.begin, region.size);
}

std::optional<DevicePtr> VaRangeAllocator::allocate(std::uint64_t size) {
  if (size == 0 || size % alignment_ != 0) return std::nullopt;
  for (auto it = freeByBase_.begin(); it != freeByBase_.end(); ++it) {
    if (it->second < size) continue;
    const DevicePtr base = it->first;
    const std::uint64_t remaining = it->second - size;
    freeByBase_.erase(it);
    if (remaining > 0) freeByBase_.emplace(base + size, remaining);
    freeBytes_ -= size;
    return base;
  }
  return std::nullopt;
}

bool VaRangeAllocator::release(DevicePtr base, std::uint64_t size) {
  if (size == 0 || size % alignment_ != 0 || base % alignment_ != 0) return false;
  if (base < region_.begin || base > region_.end() || size > region_.end() - base) return false;

  // The released range must not overlap the free interval before it or the one at/after it.
  auto next = freeByBase_.lower_bound(base);
  if (next != freeByBase_.end() && next->first < base + size) return false;
  auto previous = next == freeByBase_.begin() ? freeByBase_.end() : std::prev(next);
  if (previous != freeByBase_.end() && previous->first + previous->second > base) return false;

  DevicePtr mergedBase = base;
  std::uint64_t mergedSize = size;
  if (previous != freeByBase_.end() && previous->first + previous->second == base) {
    mergedBase = previous->first;
    mergedSize += previous->second;
    freeByBase_.erase(previous);
  }
  if (next != freeByBase_.end() && next->first == base + size) {
    mergedSize += next->second;
    freeByBase_.erase(next);
  }
  freeByBase_.emplace(mergedBase, mergedSize);
  freeBytes_ += size;
  return true;
}

}  // namespace agileos::memmgr
