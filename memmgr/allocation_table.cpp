#include "memmgr/allocation_table.h"

#include <iterator>
#include <limits>
#include <mutex>

namespace agileos::memmgr {

const char* toString(PointerCheck verdict) {
  switch (verdict) {
    case PointerCheck::kOk:
      return "ok";
    case PointerCheck::kNull:
      return "null pointer";
    case PointerCheck::kOverflow:
      return "range wraps around the address space";
    case PointerCheck::kProtected:
      return "range touches protected AgileOS memory";
    case PointerCheck::kUnknown:
      return "not a live allocation";
    case PointerCheck::kForeign:
      return "allocation of another client";
    case PointerCheck::kOutOfBounds:
      return "range runs past the end of its allocation";
  }
  return "invalid verdict";
}

bool AllocationTable::insert(const Allocation& allocation) {
  if (allocation.size == 0) return false;
  if (allocation.size > std::numeric_limits<DevicePtr>::max() - allocation.base) return false;

  std::unique_lock lock(mutex_);
  // Entries never overlap, so only the first entry at or after base and the one before it can collide.
  auto next = byBase_.lower_bound(allocation.base);
  if (next != byBase_.end() && next->first < allocation.end()) return false;
  if (next != byBase_.begin() && std::prev(next)->second.end() > allocation.base) return false;

  byBase_.emplace_hint(next, allocation.base, allocation);
  bytesByOwner_[allocation.owner] += allocation.size;
  return true;
}

std::optional<Allocation> AllocationTable::erase(ClientId owner, DevicePtr base, AllocationKind kind) {
  std::unique_lock lock(mutex_);
  auto it = byBase_.find(base);
  if (it == byBase_.end() || it->second.owner != owner || it->second.kind != kind) return std::nullopt;

  Allocation removed = it->second;
  byBase_.erase(it);
  auto total = bytesByOwner_.find(owner);
  total->second -= removed.size;
  if (total->second == 0) bytesByOwner_.erase(total);
  return removed;
}

bool AllocationTable::changeKind(ClientId owner, DevicePtr base, AllocationKind from, AllocationKind to) {
  std::unique_lock lock(mutex_);
  auto it = byBase_.find(base);
  if (it == byBase_.end() || it->second.owner != owner || it->second.kind != from) return false;
  it->second.kind = to;
  return true;
}

std::vector<Allocation> AllocationTable::eraseAll(ClientId owner) {
  std::unique_lock lock(mutex_);
  std::vector<Allocation> removed;
  for (auto it = byBase_.begin(); it != byBase_.end();) {
    if (it->second.owner == owner) {
      removed.push_back(it->second);
      it = byBase_.erase(it);
    } else {
      ++it;
    }
  }
  bytesByOwner_.erase(owner);
  return removed;
}

std::map<DevicePtr, Allocation>::const_iterator AllocationTable::containing(DevicePtr p) const {
  auto after = byBase_.upper_bound(p);  // first entry with base > p
  if (after == byBase_.begin()) return byBase_.end();
  auto candidate = std::prev(after);
  return p < candidate->second.end() ? candidate : byBase_.end();
}

PointerCheck AllocationTable::check(ClientId client, DevicePtr p, std::uint64_t n) const {
  if (p == 0) return PointerCheck::kNull;
  const std::uint64_t length = n == 0 ? 1 : n;
  if (length > std::numeric_limits<DevicePtr>::max() - p) return PointerCheck::kOverflow;
  if (touchesProtected(p, length)) return PointerCheck::kProtected;

  std::shared_lock lock(mutex_);
  auto it = containing(p);
  if (it == byBase_.end()) return PointerCheck::kUnknown;
  const Allocation& allocation = it->second;
  if (allocation.owner != client) return PointerCheck::kForeign;
  if (allocation.kind == AllocationKind::kGraphReserved) return PointerCheck::kUnknown;
  if (length <= allocation.end() - p) return PointerCheck::kOk;
  // Mappings the client placed back to back in its own reservation are one range of addresses for
  // the device, as natively: a range may run on through the next while each starts where the last
  // ended and is also this client's mapping.
  if (allocation.kind != AllocationKind::kVirtualMapping) return PointerCheck::kOutOfBounds;
  const DevicePtr end = p + length;
  for (auto next = std::next(it); it->second.end() < end; it = next++) {
    if (next == byBase_.end() || next->first != it->second.end() || next->second.owner != client ||
        next->second.kind != AllocationKind::kVirtualMapping) {
      return PointerCheck::kOutOfBounds;
    }
  }
  return PointerCheck::kOk;
}

std::optional<Allocation> AllocationTable::find(DevicePtr p) const {
  std::shared_lock lock(mutex_);
  auto it = containing(p);
  if (it == byBase_.end()) return std::nullopt;
  return it->second;
}

std::size_t AllocationTable::size() const {
  std::shared_lock lock(mutex_);
  return byBase_.size();
}

std::uint64_t AllocationTable::bytesOwnedBy(ClientId owner) const {
  std::shared_lock lock(mutex_);
  auto it = bytesByOwner_.find(owner);
  return it == bytesByOwner_.end() ? 0 : it->second;
}

}  // namespace agileos::memmgr
