// Graph allocations' address space and physical blocks (memory_manager.h, "Graph allocations").
//
// Invariants (mutex_ held for all of them):
// - A graph reservation is a range of the user range's address allocator owned by one client, with
//   exactly one table entry (kGraphReserved or kGraphLive) at its base; nothing else is placed in it.
// - A reservation's `block`, when set, is a block of the same owner, mapped over the whole span and
//   counted in the block's `mappings`; a kGraphLive entry always has one.
// - A block is charged to its owner (physicalBytesOf) from its creation until it is destroyed, and
//   is destroyed only when it is mapped at no reservation.
#include <vector>

#include "memmgr/memory_manager.h"
#include "memmgr/memory_manager_state.h"

namespace agileos::memmgr {

std::uint64_t MemoryManager::graphSpan(std::uint64_t size) const {
  if (size == 0 || size > kUserRange.size) return 0;
  return (size + granularity_ - 1) / granularity_ * granularity_;
}

CUresult MemoryManager::reserveGraphAddress(ClientId client, std::uint64_t size, DevicePtr* out) {
  if (out == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t span = graphSpan(size);
  if (span == 0 || span > kMaxReservedBytesPerClient) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mutex_);
  auto reserved = state_->reservedBytesOf.find(client);
  const std::uint64_t held = reserved == state_->reservedBytesOf.end() ? 0 : reserved->second;
  if (span > kMaxReservedBytesPerClient - held) return CUDA_ERROR_OUT_OF_MEMORY;
  const std::optional<DevicePtr> base = state_->addresses.allocate(span);
  if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!table_.insert({*base, size, client, AllocationKind::kGraphReserved})) {
    state_->addresses.release(*base, span);  // unreachable while the invariants hold
    return CUDA_ERROR_UNKNOWN;
  }
  state_->graphReservations.emplace(*base, State::GraphReservation{span, client, 0});
  state_->reservedBytesOf[client] += span;
  *out = *base;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::freeGraphReservation(ClientId client, DevicePtr base) {
  std::lock_guard lock(mutex_);
  auto it = state_->graphReservations.find(base);
  if (it == state_->graphReservations.end() || it->second.owner != client) return CUDA_ERROR_INVALID_VALUE;
  // A live graph allocation may be in use by the client's calls: only one that is not live goes.
  if (!table_.erase(client, base, AllocationKind::kGraphReserved)) return CUDA_ERROR_INVALID_VALUE;
  const State::GraphReservation reservation = it->second;
  state_->graphReservations.erase(it);
  subtractBytes(state_->reservedBytesOf, client, reservation.span);
  if (reservation.block == 0) {
    state_->addresses.release(base, reservation.span);
    return CUDA_SUCCESS;
  }
  --state_->graphBlocks.at(reservation.block).mappings;
  const CUresult result = backend_.unmap(base, reservation.span);
  // An address range the driver may still map is never placed again.
  if (result == CUDA_SUCCESS) state_->addresses.release(base, reservation.span);
  return result;
}

CUresult MemoryManager::createGraphBlock(ClientId client, std::uint64_t size, std::uint64_t* block) {
  if (block == nullptr || size == 0 || size % granularity_ != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > kUserRange.size) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mutex_);
  if (!fitsQuota(client, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  BackedRange home;
  if (CUresult result = createMapping(size, &home); result != CUDA_SUCCESS) return result;
  const std::uint64_t id = state_->nextGraphBlock++;
  state_->graphBlocks.emplace(id, State::GraphBlock{home, client, 0});
  state_->physicalBytesOf[client] += size;
  *block = id;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::destroyGraphBlock(ClientId client, std::uint64_t block) {
  std::lock_guard lock(mutex_);
  auto it = state_->graphBlocks.find(block);
  if (it == state_->graphBlocks.end() || it->second.owner != client || it->second.mappings != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const BackedRange home = it->second.home;
  state_->graphBlocks.erase(it);
  subtractBytes(state_->physicalBytesOf, client, home.size);
  return state_->mappings.destroy(home);
}

CUresult MemoryManager::mapGraphBlock(ClientId client, DevicePtr base, std::uint64_t block) {
  std::lock_guard lock(mutex_);
  auto reservation = state_->graphReservations.find(base);
  auto physical = state_->graphBlocks.find(block);
  if (reservation == state_->graphReservations.end() || reservation->second.owner != client ||
      reservation->second.block != 0 || physical == state_->graphBlocks.end() ||
      physical->second.owner != client || physical->second.home.size < reservation->second.span) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult result = mapReadWriteLocked(base, reservation->second.span, physical->second.home.handle);
      result != CUDA_SUCCESS) {
    return result;
  }
  reservation->second.block = block;
  ++physical->second.mappings;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::unmapGraphReservation(ClientId client, DevicePtr base) {
  std::lock_guard lock(mutex_);
  auto reservation = state_->graphReservations.find(base);
  if (reservation == state_->graphReservations.end() || reservation->second.owner != client ||
      reservation->second.block == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::optional<Allocation> entry = table_.find(base);
  if (!entry || entry->kind != AllocationKind::kGraphReserved) return CUDA_ERROR_INVALID_VALUE;  // live
  const CUresult result = backend_.unmap(base, reservation->second.span);
  if (result != CUDA_SUCCESS) return result;  // still mapped: the records stay as they are
  --state_->graphBlocks.at(reservation->second.block).mappings;
  reservation->second.block = 0;
  return CUDA_SUCCESS;
}

bool MemoryManager::setGraphAllocationLive(ClientId client, DevicePtr base, bool live) {
  std::lock_guard lock(mutex_);
  if (live) {
    auto reservation = state_->graphReservations.find(base);
    if (reservation == state_->graphReservations.end() || reservation->second.block == 0) return false;
    return table_.changeKind(client, base, AllocationKind::kGraphReserved, AllocationKind::kGraphLive);
  }
  return table_.changeKind(client, base, AllocationKind::kGraphLive, AllocationKind::kGraphReserved);
}

void MemoryManager::releaseGraphMemoryLocked(ClientId client) {
  for (auto it = state_->graphReservations.begin(); it != state_->graphReservations.end();) {
    if (it->second.owner != client) {
      ++it;
      continue;
    }
    table_.erase(client, it->first, AllocationKind::kGraphReserved);
    table_.erase(client, it->first, AllocationKind::kGraphLive);
    // An address range the driver may still map is never placed again.
    if (it->second.block == 0 || backend_.unmap(it->first, it->second.span) == CUDA_SUCCESS)
      state_->addresses.release(it->first, it->second.span);
    subtractBytes(state_->reservedBytesOf, client, it->second.span);
    it = state_->graphReservations.erase(it);
  }
  for (auto it = state_->graphBlocks.begin(); it != state_->graphBlocks.end();) {
    if (it->second.owner != client) {
      ++it;
      continue;
    }
    subtractBytes(state_->physicalBytesOf, client, it->second.home.size);
    state_->mappings.destroy(it->second.home);
    it = state_->graphBlocks.erase(it);
  }
}

}  // namespace agileos::memmgr
