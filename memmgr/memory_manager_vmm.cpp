// The driver's virtual-memory API for clients, confined to the user range (memory_manager.h,
// "reserveAddress" and the calls after it).
//
// Invariants (mutex_ held for all of them):
// - A reservation is a range of the user range's address allocator owned by one client; nothing
//   but that client's mappings is ever placed in it.
// - A mapping lies inside one reservation of its owner, overlaps no other mapping, and has exactly
//   one kVirtualMapping table entry, inserted after it is mapped and accessible and erased before
//   it is unmapped (the table's rule for every entry).
// - A physical allocation is charged to its owner from cuMemCreate until its memory is given back,
//   which happens when it is released and unmapped everywhere; the teardown of its home mapping
//   scrubs it (mapping_lifecycle.h), so no later owner of the pages sees its contents.
#include <algorithm>
#include <limits>
#include <vector>

#include "memmgr/memory_manager.h"
#include "memmgr/memory_manager_state.h"

namespace agileos::memmgr {
namespace {

bool isPowerOfTwo(std::uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

}  // namespace

CUresult MemoryManager::reserveAddress(ClientId client, std::uint64_t size, std::uint64_t alignment,
                                       DevicePtr* out) {
  if (out == nullptr || size == 0 || size % granularity_ != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && !isPowerOfTwo(alignment)) return CUDA_ERROR_INVALID_VALUE;
  alignment = std::max<std::uint64_t>(alignment, granularity_);
  if (size > kMaxReservedBytesPerClient || alignment > kUserRange.size) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mutex_);
  std::uint64_t& reserved = state_->reservedBytesOf[client];
  if (size > kMaxReservedBytesPerClient - reserved) {
    if (reserved == 0) state_->reservedBytesOf.erase(client);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // Over-allocate by the extra alignment and give back what lies outside the aligned range.
  const std::uint64_t taken = size + (alignment - granularity_);
  std::optional<DevicePtr> base = state_->addresses.allocate(taken);
  if (!base) {
    if (reserved == 0) state_->reservedBytesOf.erase(client);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const DevicePtr aligned = (*base + alignment - 1) / alignment * alignment;
  if (aligned > *base) state_->addresses.release(*base, aligned - *base);
  if (*base + taken > aligned + size)
    state_->addresses.release(aligned + size, *base + taken - (aligned + size));
  state_->reservations.emplace(aligned, State::Reservation{size, client});
  reserved += size;
  *out = aligned;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::freeAddress(ClientId client, DevicePtr base, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  auto it = state_->reservations.find(base);
  if (it == state_->reservations.end() || it->second.owner != client || it->second.size != size)
    return CUDA_ERROR_INVALID_VALUE;
  auto mapped = state_->clientMappings.lower_bound(base);
  if (mapped != state_->clientMappings.end() && mapped->first < base + size) return CUDA_ERROR_INVALID_VALUE;
  state_->addresses.release(base, size);
  state_->reservations.erase(it);
  subtractBytes(state_->reservedBytesOf, client, size);
  return CUDA_SUCCESS;
}

CUresult MemoryManager::createPhysical(ClientId client, std::uint64_t size, std::uint64_t* handle,
                                       bool compressible, bool* compressed) {
  if (handle == nullptr || size == 0 || size % granularity_ != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > kUserRange.size) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mutex_);
  if (!fitsQuota(client, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  if (compressible) {
    std::size_t compressibleGranularity = 0;
    compressible = backend_.compressibleGranularity(&compressibleGranularity) == CUDA_SUCCESS &&
                   compressibleGranularity != 0 && granularity_ % compressibleGranularity == 0;
  }
  BackedRange home;
  if (CUresult result = createMapping(size, &home, compressible); result != CUDA_SUCCESS) return result;
  if (compressed != nullptr) *compressed = home.compressed;
  const std::uint64_t id = state_->nextHandle++;
  state_->physical.emplace(id, State::PhysicalAllocation{home, client});
  state_->physicalBytesOf[client] += size;
  *handle = id;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::releasePhysical(ClientId client, std::uint64_t handle) {
  std::lock_guard lock(mutex_);
  auto it = state_->physical.find(handle);
  if (it == state_->physical.end() || it->second.owner != client || it->second.references == 0)
    return CUDA_ERROR_INVALID_VALUE;
  --it->second.references;
  return it->second.references == 0 && it->second.mappings == 0 ? destroyPhysicalLocked(handle)
                                                                : CUDA_SUCCESS;
}

CUresult MemoryManager::destroyPhysicalLocked(std::uint64_t handle) {
  auto it = state_->physical.find(handle);
  const State::PhysicalAllocation allocation = it->second;
  state_->physical.erase(it);
  subtractBytes(state_->physicalBytesOf, allocation.owner, allocation.home.size);
  return state_->mappings.destroy(allocation.home);
}

CUresult MemoryManager::mapPhysical(ClientId client, DevicePtr va, std::uint64_t size, std::uint64_t handle) {
  if (size == 0 || size % granularity_ != 0 || va % granularity_ != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  auto allocation = state_->physical.find(handle);
  if (allocation == state_->physical.end() || allocation->second.owner != client ||
      allocation->second.references == 0 || size > allocation->second.home.size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Inside one reservation of this client (reservations never overlap, so the one at or below va).
  auto reservation = state_->reservations.upper_bound(va);
  if (reservation == state_->reservations.begin()) return CUDA_ERROR_INVALID_VALUE;
  --reservation;
  const DevicePtr reservedEnd = reservation->first + reservation->second.size;
  if (reservation->second.owner != client || va >= reservedEnd || size > reservedEnd - va)
    return CUDA_ERROR_INVALID_VALUE;
  // Over no mapping: the next one starts at or after the end, the previous one ends by va.
  auto next = state_->clientMappings.lower_bound(va);
  if (next != state_->clientMappings.end() && next->first < va + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != state_->clientMappings.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second.size > va) return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult result = mapReadWriteLocked(va, size, allocation->second.home.handle); result != CUDA_SUCCESS)
    return result;
  if (!table_.insert({va, size, client, AllocationKind::kVirtualMapping})) {
    backend_.unmap(va, size);  // unreachable while the invariants hold: nothing else lies here
    return CUDA_ERROR_UNKNOWN;
  }
  state_->clientMappings.emplace(va, State::ClientMapping{size, client, handle});
  ++allocation->second.mappings;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::mapReadWriteLocked(DevicePtr va, std::uint64_t size, PhysicalHandle handle) {
  if (CUresult result = backend_.map(va, size, handle); result != CUDA_SUCCESS) return result;
  if (CUresult result = backend_.setAccess(va, size); result != CUDA_SUCCESS) {
    backend_.unmap(va, size);
    return result;
  }
  return CUDA_SUCCESS;
}

std::vector<DevicePtr> MemoryManager::mappingRunLocked(ClientId client, DevicePtr va,
                                                       std::uint64_t size) const {
  std::vector<DevicePtr> run;
  if (size == 0 || size > ~DevicePtr{0} - va) return run;
  DevicePtr next = va;
  const DevicePtr end = va + size;
  while (next < end) {
    auto it = state_->clientMappings.find(next);
    if (it == state_->clientMappings.end() || it->second.owner != client || it->second.size > end - next) {
      return {};
    }
    run.push_back(next);
    next += it->second.size;
  }
  return run;
}

CUresult MemoryManager::unmapLocked(DevicePtr va) {
  auto mapping = state_->clientMappings.find(va);
  const State::ClientMapping record = mapping->second;
  state_->clientMappings.erase(mapping);
  CUresult result = backend_.unmap(va, record.size);
  auto allocation = state_->physical.find(record.handle);
  if (--allocation->second.mappings == 0 && allocation->second.references == 0) {
    if (CUresult destroyed = destroyPhysicalLocked(record.handle); result == CUDA_SUCCESS) result = destroyed;
  }
  return result;
}

CUresult MemoryManager::unmapRange(ClientId client, DevicePtr va, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  const std::vector<DevicePtr> run = mappingRunLocked(client, va, size);
  if (run.empty()) return CUDA_ERROR_INVALID_VALUE;
  CUresult result = CUDA_SUCCESS;
  for (DevicePtr base : run) {
    table_.erase(client, base, AllocationKind::kVirtualMapping);
    if (CUresult unmapped = unmapLocked(base); result == CUDA_SUCCESS) result = unmapped;
  }
  return result;
}

bool MemoryManager::coversMappings(ClientId client, DevicePtr va, std::uint64_t size) const {
  std::lock_guard lock(mutex_);
  return !mappingRunLocked(client, va, size).empty();
}

bool MemoryManager::handleMappedAtLocked(ClientId client, DevicePtr va, std::uint64_t* handle) const {
  auto it = state_->clientMappings.upper_bound(va);
  if (it == state_->clientMappings.begin()) return false;
  --it;
  if (it->second.owner != client || va - it->first >= it->second.size) return false;
  *handle = it->second.handle;
  return true;
}

bool MemoryManager::mappedAllocation(ClientId client, DevicePtr va, std::uint64_t* handle,
                                     std::uint64_t* size) const {
  std::lock_guard lock(mutex_);
  if (!handleMappedAtLocked(client, va, handle)) return false;
  *size = state_->physical.at(*handle).home.size;
  return true;
}

CUresult MemoryManager::retainPhysical(ClientId client, DevicePtr va, std::uint64_t* handle) {
  std::lock_guard lock(mutex_);
  std::uint64_t mapped = 0;
  if (!handleMappedAtLocked(client, va, &mapped)) return CUDA_ERROR_INVALID_VALUE;
  State::PhysicalAllocation& allocation = state_->physical.at(mapped);
  if (allocation.references == std::numeric_limits<std::uint64_t>::max()) return CUDA_ERROR_INVALID_VALUE;
  ++allocation.references;
  *handle = mapped;
  return CUDA_SUCCESS;
}

void MemoryManager::releaseVirtualMemoryLocked(ClientId client) {
  std::vector<DevicePtr> mapped;
  for (const auto& [va, mapping] : state_->clientMappings) {
    if (mapping.owner == client) mapped.push_back(va);
  }
  for (DevicePtr va : mapped) {
    table_.erase(client, va, AllocationKind::kVirtualMapping);
    unmapLocked(va);
  }
  for (auto it = state_->physical.begin(); it != state_->physical.end();) {
    if (it->second.owner != client) {
      ++it;
      continue;
    }
    state_->mappings.destroy(it->second.home);
    it = state_->physical.erase(it);
  }
  state_->physicalBytesOf.erase(client);
  for (auto it = state_->reservations.begin(); it != state_->reservations.end();) {
    if (it->second.owner != client) {
      ++it;
      continue;
    }
    state_->addresses.release(it->first, it->second.size);
    it = state_->reservations.erase(it);
  }
  state_->reservedBytesOf.erase(client);
}

}  // namespace agileos::memmgr
