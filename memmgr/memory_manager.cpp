#include "memmgr/memory_manager.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memmgr/memory_manager_state.h"

namespace agileos::memmgr {
namespace {

struct NamedRegion {
  const char* name;
  Region region;
};

// Reserved in this order; given back in reverse.
constexpr NamedRegion kReservedRegions[] = {
    {"guard zone", kGuardZone},
    {"I/O aperture (outside its MMIO window)", kIoApertureReserved},
    {"module range", kModuleRange},
    {"user range", kUserRange},
};

std::string hex(std::uint64_t value) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string describe(const NamedRegion& named) {
  return std::string(named.name) + " [" + hex(named.region.begin) + ", " + hex(named.region.end()) + ")";
}

// A granularity is usable if it is a power of two, keeps every user pointer
// 256-byte aligned and divides the bases and sizes of the fixed ranges.
bool usableGranularity(std::size_t granularity) {
  if (granularity < kAllocationAlignment || (granularity & (granularity - 1)) != 0) return false;
  return std::all_of(std::begin(kReservedRegions), std::end(kReservedRegions), [&](const NamedRegion& named) {
    return named.region.begin % granularity == 0 && named.region.size % granularity == 0;
  });
}

void setError(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
}

}  // namespace

std::unique_ptr<MemoryManager> MemoryManager::create(VmmBackend& backend, std::string* error) {
  std::size_t granularity = 0;
  if (CUresult result = backend.allocationGranularity(&granularity); result != CUDA_SUCCESS) {
    setError(error, "cuMemGetAllocationGranularity failed with CUresult " + std::to_string(result));
    return nullptr;
  }
  if (!usableGranularity(granularity)) {
    setError(error, "unusable VMM allocation granularity " + std::to_string(granularity) +
                        " (need a power of two >= 256 that divides the fixed ranges)");
    return nullptr;
  }

  std::size_t reservedCount = 0;
  std::string failure;
  for (const NamedRegion& named : kReservedRegions) {
    DevicePtr granted = 0;
    const CUresult result = backend.reserve(named.region.begin, named.region.size, &granted);
    if (result != CUDA_SUCCESS) {
      failure = "cannot reserve the " + describe(named) + ": cuMemAddressReserve failed with CUresult " +
                std::to_string(result);
      break;
    }
    if (granted != named.region.begin) {
      failure = "cannot reserve the " + describe(named) + ": the driver granted " + hex(granted) +
                " instead; another mapping probably occupies the fixed address";
      backend.freeReservation(granted, named.region.size);
      break;
    }
    ++reservedCount;
  }
  if (!failure.empty()) {
    while (reservedCount > 0) {
      const Region& region = kReservedRegions[--reservedCount].region;
      backend.freeReservation(region.begin, region.size);
    }
    setError(error, failure);
    return nullptr;
  }
  return std::unique_ptr<MemoryManager>(new MemoryManager(backend, granularity));
}

MemoryManager::MemoryManager(VmmBackend& backend, std::size_t granularity)
    : backend_(backend), granularity_(granularity), state_(std::make_unique<State>(backend, granularity)) {}

MemoryManager::~MemoryManager() {
  std::lock_guard lock(mutex_);
  // Failures cannot be reported from here; a range whose teardown fails twice stays
  // with the driver until the context is destroyed, which frees everything anyway.
  std::set<ClientId> virtualMemoryOwners;
  for (const auto& [handle, allocation] : state_->physical) virtualMemoryOwners.insert(allocation.owner);
  for (const auto& [base, reservation] : state_->reservations) virtualMemoryOwners.insert(reservation.owner);
  for (const auto& [id, block] : state_->graphBlocks) virtualMemoryOwners.insert(block.owner);
  for (const auto& [base, reservation] : state_->graphReservations)
    virtualMemoryOwners.insert(reservation.owner);
  for (ClientId owner : virtualMemoryOwners) {
    releaseGraphMemoryLocked(owner);
    releaseVirtualMemoryLocked(owner);
  }
  for (const BackedRange& chunk : state_->chunks.takeAllChunks()) state_->mappings.destroy(chunk);
  for (const auto& [base, allocation] : state_->large) state_->mappings.destroy(allocation.range);
  state_->large.clear();
  for (const auto& [base, allocation] : state_->protectedAllocations) {
    state_->protectedMappings.destroy(allocation.range);
  }
  state_->protectedAllocations.clear();
  state_->protectedMappings.retryStranded();
  state_->largeBytesOf.clear();
  state_->mappings.retryStranded();
  for (auto named = std::rbegin(kReservedRegions); named != std::rend(kReservedRegions); ++named) {
    backend_.freeReservation(named->region.begin, named->region.size);
  }
}

CUresult MemoryManager::createMapping(std::uint64_t size, BackedRange* out, bool compressible) {
  const CUresult result = state_->mappings.create(size, out, compressible);
  if (result != CUDA_ERROR_OUT_OF_MEMORY) return result;
  // Memory (or VA) is exhausted: give the clients' cached empty chunks back and try once more.
  const std::vector<BackedRange> cached = state_->chunks.takeCachedChunks();
  if (cached.empty()) return result;
  for (const BackedRange& chunk : cached) state_->mappings.destroy(chunk);
  return state_->mappings.create(size, out, compressible);
}

CUresult MemoryManager::allocate(ClientId client, std::uint64_t size, DevicePtr* out) {
  return allocateLocked(client, size, out);
}

CUresult MemoryManager::allocateLocked(ClientId client, std::uint64_t size, DevicePtr* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) {
    *out = 0;
    return CUDA_SUCCESS;
  }
  // More than the whole user range can never be placed (and rounding it could wrap).
  if (size > kUserRange.size) return CUDA_ERROR_OUT_OF_MEMORY;

  std::lock_guard lock(mutex_);
  return size < kSmallAllocationLimit ? allocateSmall(client, size, out) : allocateLarge(client, size, out);
}

CUresult MemoryManager::allocateSmall(ClientId client, std::uint64_t size, DevicePtr* out) {
  ChunkSuballocator& chunks = state_->chunks;
  std::optional<DevicePtr> slot = chunks.takeSlot(client, size);
  if (!slot) {
    if (!fitsQuota(client, chunks.chunkBytes())) return CUDA_ERROR_OUT_OF_MEMORY;
    BackedRange chunk;
    if (CUresult result = createMapping(chunks.chunkBytes(), &chunk); result != CUDA_SUCCESS) return result;
    chunks.adoptEmptyChunk(client, chunk);
    slot = chunks.takeSlot(client, size);  // cannot fail: the client now has an empty chunk
  }
  if (!table_.insert({*slot, size, client, AllocationKind::kUser})) {
    // Unreachable while the invariants hold (slots never overlap, and nothing else
    // is recorded inside the user range); undo rather than hand out a bad pointer.
    std::optional<BackedRange> emptied;
    chunks.releaseSlot(client, *slot, &emptied);
    if (emptied) state_->mappings.destroy(*emptied);
    return CUDA_ERROR_UNKNOWN;
  }
  *out = *slot;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::allocateLarge(ClientId client, std::uint64_t size, DevicePtr* out) {
  const std::uint64_t mapped = (size + granularity_ - 1) / granularity_ * granularity_;  // size <= 1 TiB
  if (!fitsQuota(client, mapped)) return CUDA_ERROR_OUT_OF_MEMORY;
  BackedRange range;
  if (CUresult result = createMapping(mapped, &range); result != CUDA_SUCCESS) return result;
  if (!table_.insert({range.va, size, client, AllocationKind::kUser})) {
    state_->mappings.destroy(range);  // unreachable while the invariants hold, as in allocateSmall
    return CUDA_ERROR_UNKNOWN;
  }
  state_->large.emplace(range.va, State::LargeAllocation{range, client});
  state_->largeBytesOf[client] += mapped;
  *out = range.va;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::free(ClientId client, DevicePtr p) {
  if (p == 0) return CUDA_SUCCESS;
  std::lock_guard lock(mutex_);
  // The table decides: only the exact base of a live kUser entry of this client is erased.
  if (!table_.erase(client, p, AllocationKind::kUser)) return CUDA_ERROR_INVALID_VALUE;
  return releaseBackingLocked(client, p);
}

CUresult MemoryManager::releaseBackingLocked(ClientId client, DevicePtr p) {
  if (auto large = state_->large.find(p); large != state_->large.end()) {
    const BackedRange range = large->second.range;
    state_->large.erase(large);
    subtractBytes(state_->largeBytesOf, client, range.size);
    return state_->mappings.destroy(range);
  }
  std::optional<BackedRange> emptied;
  // Every small user entry is a live slot; if the chunks disagree with the table, that is a bug.
  if (!state_->chunks.releaseSlot(client, p, &emptied)) return CUDA_ERROR_UNKNOWN;
  return emptied ? state_->mappings.destroy(*emptied) : CUDA_SUCCESS;
}

PointerCheck MemoryManager::check(ClientId client, DevicePtr p, std::uint64_t n) const {
  return table_.check(client, p, n);
}

bool MemoryManager::isUserAllocationBase(ClientId client, DevicePtr p, std::uint64_t* size) const {
  if (p == 0) return false;
  std::lock_guard lock(mutex_);
  const std::optional<Allocation> entry = table_.find(p);
  if (!entry || entry->base != p || entry->owner != client || entry->kind != AllocationKind::kUser)
    return false;
  if (size != nullptr) *size = entry->size;
  return true;
}

bool MemoryManager::registerModuleGlobal(ClientId client, DevicePtr p, std::uint64_t size) {
  if (p == 0 || size == 0 || size > std::numeric_limits<DevicePtr>::max() - p) return false;
  if (touchesProtected(p, size)) return false;
  if (p < kUserRange.end() && p + size > kUserRange.begin) return false;
  std::lock_guard lock(mutex_);
  return table_.insert({p, size, client, AllocationKind::kModuleGlobal});
}

void MemoryManager::forgetModuleGlobal(ClientId client, DevicePtr p) {
  std::lock_guard lock(mutex_);
  table_.erase(client, p, AllocationKind::kModuleGlobal);
}

CUresult MemoryManager::allocateProtected(ClientId client, std::uint64_t size, DevicePtr* out,
                                          ProtectedUse use) {
  if (out == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > kModuleRange.size) return CUDA_ERROR_OUT_OF_MEMORY;
  const std::uint64_t mapped = (size + granularity_ - 1) / granularity_ * granularity_;
  std::lock_guard lock(mutex_);
  if (use == ProtectedUse::kState && state_->runningUnguardedCode.contains(client))
    return CUDA_ERROR_NOT_PERMITTED;
  if (!fitsQuota(client, mapped)) return CUDA_ERROR_OUT_OF_MEMORY;
  BackedRange range;
  if (CUresult result = state_->protectedMappings.create(mapped, &range); result != CUDA_SUCCESS)
    return result;
  // Physical memory may hold a previous owner's bytes until it is written: zero it first.
  if (CUresult result = backend_.fill(range.va, 0, range.size); result != CUDA_SUCCESS) {
    state_->protectedMappings.destroy(range);
    return result;
  }
  state_->protectedAllocations.emplace(range.va, State::LargeAllocation{range, client, use});
  *out = range.va;
  return CUDA_SUCCESS;
}

CUresult MemoryManager::freeProtected(ClientId client, DevicePtr p) {
  std::lock_guard lock(mutex_);
  auto it = state_->protectedAllocations.find(p);
  if (it == state_->protectedAllocations.end() || it->second.owner != client) return CUDA_ERROR_INVALID_VALUE;
  const BackedRange range = it->second.range;
  state_->protectedAllocations.erase(it);
  return state_->protectedMappings.destroy(range);
}

CUresult MemoryManager::exportProtected(ClientId client, DevicePtr p, int* fd) {
  if (fd == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  if (state_->runningUnguardedCode.contains(client)) return CUDA_ERROR_NOT_PERMITTED;
  auto it = state_->protectedAllocations.find(p);
  if (it == state_->protectedAllocations.end() || it->second.owner != client) return CUDA_ERROR_INVALID_VALUE;
  return backend_.exportToFd(it->second.range.handle, fd);
}

CUresult MemoryManager::exportUserAllocation(ClientId client, DevicePtr p, std::uint64_t size, int* fd,
                                             std::uint64_t* handleBytes, std::uint64_t* offset) {
  if (fd == nullptr || handleBytes == nullptr || offset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  if (state_->runningUnguardedCode.contains(client)) return CUDA_ERROR_NOT_PERMITTED;
  const std::optional<Allocation> found = table_.find(p);
  if (!found || found->owner != client || found->kind != AllocationKind::kUser || found->base != p ||
      found->size != size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::optional<BackedRange> range;
  if (auto large = state_->large.find(p); large != state_->large.end()) {
    range = large->second.range;
  } else {
    range = state_->chunks.chunkOf(client, p);
  }
  if (!range) return CUDA_ERROR_UNKNOWN;  // every live user entry is backed; a bug otherwise
  const CUresult result = backend_.exportToFd(range->handle, fd);
  if (result != CUDA_SUCCESS) return result;
  *handleBytes = range->size;
  *offset = p - range->va;
  return CUDA_SUCCESS;
}

std::uint64_t MemoryManager::protectedSize(ClientId client, DevicePtr p) const {
  std::lock_guard lock(mutex_);
  auto it = state_->protectedAllocations.find(p);
  return it == state_->protectedAllocations.end() || it->second.owner != client ? 0 : it->second.range.size;
}

std::optional<DevicePtr> MemoryManager::placeIoRange(ClientId client, std::uint64_t size) {
  if (size == 0 || size > kMmioWindow.size) return std::nullopt;
  const std::uint64_t rounded =
      (size + kIoPlacementAlignment - 1) / kIoPlacementAlignment * kIoPlacementAlignment;
  std::lock_guard lock(mutex_);
  if (state_->runningUnguardedCode.contains(client)) return std::nullopt;
  const std::optional<DevicePtr> base = state_->ioAddresses.allocate(rounded);
  if (base) state_->ioPlacements.emplace(*base, State::IoPlacement{rounded, client});
  return base;
}

bool MemoryManager::releaseIoRange(ClientId client, DevicePtr p) {
  std::lock_guard lock(mutex_);
  auto it = state_->ioPlacements.find(p);
  if (it == state_->ioPlacements.end() || it->second.owner != client) return false;
  state_->ioAddresses.release(p, it->second.size);
  state_->ioPlacements.erase(it);
  return true;
}

std::uint64_t MemoryManager::protectedBytes(ClientId client) const {
  std::lock_guard lock(mutex_);
  std::uint64_t bytes = 0;
  for (const auto& [base, allocation] : state_->protectedAllocations) {
    if (allocation.owner == client) bytes += allocation.range.size;
  }
  return bytes;
}

bool MemoryManager::holdsProtectedState(ClientId client) const {
  std::lock_guard lock(mutex_);
  return holdsProtectedStateLocked(client);
}

bool MemoryManager::holdsProtectedStateLocked(ClientId client) const {
  for (const auto& [base, allocation] : state_->protectedAllocations) {
    if (allocation.owner == client && allocation.use == ProtectedUse::kState) return true;
  }
  for (const auto& [base, placement] : state_->ioPlacements) {
    if (placement.owner == client) return true;
  }
  return false;
}

bool MemoryManager::admitUnguardedCode(ClientId client) {
  std::lock_guard lock(mutex_);
  if (holdsProtectedStateLocked(client)) return false;
  state_->runningUnguardedCode.insert(client);
  return true;
}

bool MemoryManager::runsUnguardedCode(ClientId client) const {
  std::lock_guard lock(mutex_);
  return state_->runningUnguardedCode.contains(client);
}

void MemoryManager::releaseProtected(ClientId client) {
  std::lock_guard lock(mutex_);
  State::destroyAllOf(client, state_->protectedAllocations, state_->protectedMappings);
  state_->runningUnguardedCode.erase(client);
}

void MemoryManager::releaseClient(ClientId client) {
  std::lock_guard lock(mutex_);
  // Entries go first, so no check() passes for memory that is being torn down.
  table_.eraseAll(client);
  for (const BackedRange& chunk : state_->chunks.takeChunksOf(client)) state_->mappings.destroy(chunk);
  State::destroyAllOf(client, state_->large, state_->mappings);
  state_->largeBytesOf.erase(client);
  releaseGraphMemoryLocked(client);
  releaseVirtualMemoryLocked(client);
}

std::uint64_t MemoryManager::bytesInUse(ClientId client) const {
  std::lock_guard lock(mutex_);
  auto large = state_->largeBytesOf.find(client);
  auto physical = state_->physicalBytesOf.find(client);
  return state_->chunks.bytesHeldBy(client) + (large == state_->largeBytesOf.end() ? 0 : large->second) +
         (physical == state_->physicalBytesOf.end() ? 0 : physical->second);
}

void MemoryManager::setQuota(ClientId client, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes == 0) {
    state_->quotas.erase(client);
  } else {
    state_->quotas[client] = bytes;
  }
}

std::uint64_t MemoryManager::quota(ClientId client) const {
  std::lock_guard lock(mutex_);
  auto it = state_->quotas.find(client);
  return it == state_->quotas.end() ? 0 : it->second;
}

std::uint64_t MemoryManager::chargedBytes(ClientId client) const {
  std::lock_guard lock(mutex_);
  return chargedBytesLocked(client);
}

bool MemoryManager::setDriverCharge(ClientId client, DriverShare share, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  return setDriverChargeLocked(client, share, bytes);
}

bool MemoryManager::addDriverCharge(ClientId client, DriverShare share, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  const std::uint64_t current = driverChargeLocked(client, share);
  return setDriverChargeLocked(client, share,
                               bytes > kMaxDriverShare - current ? kMaxDriverShare : current + bytes);
}

void MemoryManager::subtractDriverCharge(ClientId client, DriverShare share, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  const std::uint64_t current = driverChargeLocked(client, share);
  setDriverChargeLocked(client, share, current - std::min(current, bytes));
}

std::uint64_t MemoryManager::driverCharge(ClientId client) const {
  std::lock_guard lock(mutex_);
  return driverChargeLocked(client);
}

std::uint64_t MemoryManager::driverChargeLocked(ClientId client) const {
  auto it = state_->driverCharges.find(client);
  if (it == state_->driverCharges.end()) return 0;
  std::uint64_t total = 0;
  for (std::uint64_t share : it->second) total += share;  // each at most kMaxDriverShare
  return total;
}

std::uint64_t MemoryManager::driverCharge(ClientId client, DriverShare share) const {
  std::lock_guard lock(mutex_);
  return driverChargeLocked(client, share);
}

std::uint64_t MemoryManager::driverChargeLocked(ClientId client, DriverShare share) const {
  auto it = state_->driverCharges.find(client);
  return it == state_->driverCharges.end() ? 0 : it->second[static_cast<std::size_t>(share)];
}

bool MemoryManager::setDriverChargeLocked(ClientId client, DriverShare share, std::uint64_t bytes) {
  bytes = std::min(bytes, kMaxDriverShare);
  const std::uint64_t current = driverChargeLocked(client, share);
  if (bytes > current && !fitsQuota(client, bytes - current)) return false;
  auto& shares = state_->driverCharges[client];
  shares[static_cast<std::size_t>(share)] = bytes;
  if (std::all_of(shares.begin(), shares.end(), [](std::uint64_t b) { return b == 0; }))
    state_->driverCharges.erase(client);
  return true;
}

std::uint64_t MemoryManager::chargedBytesLocked(ClientId client) const {
  auto large = state_->largeBytesOf.find(client);
  auto physical = state_->physicalBytesOf.find(client);
  std::uint64_t bytes =
      state_->chunks.bytesHeldBy(client) + (large == state_->largeBytesOf.end() ? 0 : large->second) +
      (physical == state_->physicalBytesOf.end() ? 0 : physical->second) + driverChargeLocked(client);
  for (const auto& [base, allocation] : state_->protectedAllocations) {
    if (allocation.owner == client) bytes += allocation.range.size;
  }
  return bytes;
}

bool MemoryManager::fitsQuota(ClientId client, std::uint64_t extra) {
  auto it = state_->quotas.find(client);
  if (it == state_->quotas.end()) return true;
  const std::uint64_t quota = it->second;
  auto fits = [&] {
    const std::uint64_t charged = chargedBytesLocked(client);
    return charged <= quota && extra <= quota - charged;
  };
  if (fits()) return true;
  if (state_->chunks.cachedChunkCount(client) == 0) return false;
  for (const BackedRange& chunk : state_->chunks.takeCachedChunksOf(client)) state_->mappings.destroy(chunk);
  return fits();
}

}  // namespace agileos::memmgr
