#include "tests/cpu/memmgr/fake_vmm_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <iterator>

namespace agileos::memmgr::testing {
namespace {

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Whether [aBase, aBase+aSize) and [bBase, bBase+bSize) share a byte.
bool overlaps(std::uint64_t aBase, std::uint64_t aSize, std::uint64_t bBase, std::uint64_t bSize) {
  return aBase < bBase + bSize && bBase < aBase + aSize;
}

// The entry of `byBase` (intervals keyed by base, sizes as values or in .size) that
// could overlap [base, ...): the last one starting at or before base, and the next.
template <typename Map, typename SizeOf>
bool anyOverlap(const Map& byBase, std::uint64_t base, std::uint64_t size, SizeOf sizeOf) {
  auto next = byBase.lower_bound(base);
  if (next != byBase.end() && overlaps(base, size, next->first, sizeOf(next->second))) return true;
  if (next == byBase.begin()) return false;
  auto previous = std::prev(next);
  return overlaps(base, size, previous->first, sizeOf(previous->second));
}

}  // namespace

FakeVmmBackend::FakeVmmBackend(std::size_t granularity) : granularity_(granularity) {}

std::optional<CUresult> FakeVmmBackend::enter(VmmCall method) {
  ++calls_;
  ++callsByMethod_[method];
  if (failAtCall_ && failAtCall_->first == calls_) {
    const CUresult result = failAtCall_->second;
    failAtCall_.reset();
    return result;
  }
  if (auto it = failNext_.find(method); it != failNext_.end()) {
    const CUresult result = it->second;
    failNext_.erase(it);
    return result;
  }
  return std::nullopt;
}

CUresult FakeVmmBackend::violation(std::string what) {
  violations_.push_back(std::move(what));
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult FakeVmmBackend::allocationGranularity(std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kAllocationGranularity)) return *injected;
  *bytes = granularity_;
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::reserve(DevicePtr fixed, std::size_t size, DevicePtr* got) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kReserve)) return *injected;
  if (size == 0 || !aligned(size) || !aligned(fixed)) {
    return violation("reserve of " + hex(size) + " bytes at " + hex(fixed) + " is not granularity-aligned");
  }
  const auto sizeOf = [](std::size_t s) { return s; };
  DevicePtr base = fixed;
  if (fixed == 0 || anyOverlap(reservations_, fixed, size, sizeOf)) {
    // Like the driver, treat the address as a hint and place the range elsewhere.
    base = nextElsewhere_;
    nextElsewhere_ += (size + granularity_ - 1) / granularity_ * granularity_;
  }
  reservations_.emplace(base, size);
  *got = base;
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::freeReservation(DevicePtr base, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kFreeReservation)) return *injected;
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != size) {
    return violation("freeReservation of " + hex(size) + " bytes at " + hex(base) +
                     " matches no reservation");
  }
  if (anyOverlap(mappings_, base, size, [](const Mapping& m) { return m.size; })) {
    return violation("freeReservation at " + hex(base) + " while memory is still mapped in it");
  }
  reservations_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::exportToFd(PhysicalHandle handle, int* fd) {
  (void)handle;
  const int opened = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (opened < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  ++exports_;
  *fd = opened;
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::createPhysical(std::size_t size, PhysicalHandle* handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kCreatePhysical)) return *injected;
  if (size == 0 || !aligned(size)) return violation("createPhysical of " + hex(size) + " bytes");
  if (size > capacity_ - physicalBytes_) return CUDA_ERROR_OUT_OF_MEMORY;
  physicalBytes_ += size;
  *handle = nextHandle_++;
  handles_.emplace(*handle, Handle{size, false, false});
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::createCompressiblePhysical(std::size_t size, PhysicalHandle* handle,
                                                    bool* compressed) {
  {
    std::lock_guard lock(mutex_);
    ++compressibleRequests_;
    *compressed = grantsCompression_;
  }
  return createPhysical(size, handle);
}

CUresult FakeVmmBackend::compressibleGranularity(std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  *bytes = compressibleGranularity_ != 0 ? compressibleGranularity_ : granularity_;
  return CUDA_SUCCESS;
}

void FakeVmmBackend::setGrantsCompression(bool grants) {
  std::lock_guard lock(mutex_);
  grantsCompression_ = grants;
}

void FakeVmmBackend::setCompressibleGranularity(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  compressibleGranularity_ = bytes;
}

std::size_t FakeVmmBackend::compressibleRequests() const {
  std::lock_guard lock(mutex_);
  return compressibleRequests_;
}

CUresult FakeVmmBackend::releasePhysical(PhysicalHandle handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kReleasePhysical)) return *injected;
  auto it = handles_.find(handle);
  if (it == handles_.end()) return violation("releasePhysical of unknown handle " + std::to_string(handle));
  if (it->second.mappings != 0) {
    return violation("releasePhysical of handle " + std::to_string(handle) + " while it is mapped");
  }
  physicalBytes_ -= it->second.size;
  handles_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::map(DevicePtr va, std::size_t size, PhysicalHandle handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kMap)) return *injected;
  const std::string where = hex(size) + " bytes at " + hex(va);
  auto physical = handles_.find(handle);
  if (physical == handles_.end()) return violation("map of unknown handle at " + where);
  if (size == 0 || size > physical->second.size) return violation("map beyond the handle's size at " + where);
  if (!aligned(va)) return violation("map at unaligned " + where);
  auto after = reservations_.upper_bound(va);
  const bool insideOne =
      after != reservations_.begin() && std::prev(after)->first + std::prev(after)->second >= va + size;
  if (!insideOne) return violation("map outside any reservation: " + where);
  if (anyOverlap(mappings_, va, size, [](const Mapping& m) { return m.size; })) {
    return violation("map over an existing mapping: " + where);
  }
  ++physical->second.mappings;
  mappings_.emplace(va, Mapping{size, handle, false});
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::setAccess(DevicePtr va, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kSetAccess)) return *injected;
  auto it = mappings_.find(va);
  if (it == mappings_.end() || it->second.size != size) {
    return violation("setAccess of " + hex(size) + " bytes at " + hex(va) + " is not one whole mapping");
  }
  it->second.accessible = true;
  return CUDA_SUCCESS;
}

CUresult FakeVmmBackend::unmap(DevicePtr va, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kUnmap)) return *injected;
  auto it = mappings_.find(va);
  if (it == mappings_.end() || it->second.size != size) {
    return violation("unmap of " + hex(size) + " bytes at " + hex(va) + " is not one whole mapping");
  }
  Handle& physical = handles_.at(it->second.handle);
  if (physical.dirty && physical.mappings == 1)
    violations_.push_back("unmap of unscrubbed memory at " + hex(va));
  --physical.mappings;
  mappings_.erase(it);
  return CUDA_SUCCESS;
}

const FakeVmmBackend::Mapping* FakeVmmBackend::mappingCovering(DevicePtr va, std::size_t size,
                                                               DevicePtr* mappingBase) const {
  auto after = mappings_.upper_bound(va);
  if (after == mappings_.begin()) return nullptr;
  auto it = std::prev(after);
  if (va + size > it->first + it->second.size) return nullptr;
  *mappingBase = it->first;
  return &it->second;
}

CUresult FakeVmmBackend::fill(DevicePtr va, std::uint8_t value, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(VmmCall::kFill)) return *injected;
  DevicePtr base = 0;
  const Mapping* mapping = mappingCovering(va, size, &base);
  if (mapping == nullptr || !mapping->accessible) {
    return violation("fill of " + hex(size) + " bytes at " + hex(va) + " outside one accessible mapping");
  }
  Handle& physical = handles_.at(mapping->handle);
  if (value != 0) {
    physical.dirty = true;
  } else if (va == base && size == mapping->size && size == physical.size) {
    physical.dirty = false;
  }
  fills_.push_back({va, value, size});
  return CUDA_SUCCESS;
}

bool FakeVmmBackend::write(DevicePtr va, std::size_t size) {
  std::lock_guard lock(mutex_);
  DevicePtr base = 0;
  const Mapping* mapping = mappingCovering(va, size, &base);
  if (mapping == nullptr || !mapping->accessible) {
    violation("write of " + hex(size) + " bytes at " + hex(va) + " outside one accessible mapping");
    return false;
  }
  handles_.at(mapping->handle).dirty = true;
  return true;
}

void FakeVmmBackend::setPhysicalCapacity(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  capacity_ = bytes;
}

void FakeVmmBackend::failNthCall(std::uint64_t n, CUresult result) {
  std::lock_guard lock(mutex_);
  failAtCall_ = std::make_pair(calls_ + n, result);
}

void FakeVmmBackend::failNextCall(VmmCall method, CUresult result) {
  std::lock_guard lock(mutex_);
  failNext_[method] = result;
}

void FakeVmmBackend::clearInjectedFailures() {
  std::lock_guard lock(mutex_);
  failAtCall_.reset();
  failNext_.clear();
}

std::size_t FakeVmmBackend::liveHandles() const {
  std::lock_guard lock(mutex_);
  return handles_.size();
}

std::size_t FakeVmmBackend::liveMappings() const {
  std::lock_guard lock(mutex_);
  return mappings_.size();
}

std::size_t FakeVmmBackend::liveReservations() const {
  std::lock_guard lock(mutex_);
  return reservations_.size();
}

bool FakeVmmBackend::hasReservation(DevicePtr base, std::size_t size) const {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  return it != reservations_.end() && it->second == size;
}

std::uint64_t FakeVmmBackend::physicalBytes() const {
  std::lock_guard lock(mutex_);
  return physicalBytes_;
}

std::uint64_t FakeVmmBackend::callCount() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::uint64_t FakeVmmBackend::callCount(VmmCall method) const {
  std::lock_guard lock(mutex_);
  auto it = callsByMethod_.find(method);
  return it == callsByMethod_.end() ? 0 : it->second;
}

bool FakeVmmBackend::isMappedAndAccessible(DevicePtr va, std::size_t size) const {
  std::lock_guard lock(mutex_);
  DevicePtr base = 0;
  const Mapping* mapping = mappingCovering(va, size == 0 ? 1 : size, &base);
  return mapping != nullptr && mapping->accessible;
}

std::vector<FillRecord> FakeVmmBackend::fills() const {
  std::lock_guard lock(mutex_);
  return fills_;
}

std::vector<std::string> FakeVmmBackend::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

}  // namespace agileos::memmgr::testing
