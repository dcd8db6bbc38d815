// FakeGpuBackend: virtual memory management and transfers on emulated device memory.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/testing/fake_gpu/fake_host_buffer.h"

namespace agileos::worker {

// VMM ---------------------------------------------------------------------------------

bool FakeGpuBackend::anyOverlap(const std::map<memmgr::DevicePtr, std::size_t>& ranges,
                                memmgr::DevicePtr base, std::size_t size) {
  auto next = ranges.lower_bound(base);
  if (next != ranges.end() && next->first < base + size) return true;
  return next != ranges.begin() && std::prev(next)->first + std::prev(next)->second > base;
}

bool FakeGpuBackend::segmentOverlaps(memmgr::DevicePtr base, std::size_t size) const {
  auto next = segments_.lower_bound(base);
  if (next != segments_.end() && next->first < base + size) return true;
  return next != segments_.begin() && std::prev(next)->first + std::prev(next)->second.size > base;
}

CUresult FakeGpuBackend::allocationGranularity(std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kAllocationGranularity)) return *injected;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = config_.granularity;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::reserve(memmgr::DevicePtr fixed, std::size_t size, memmgr::DevicePtr* got) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kReserve)) return *injected;
  if (got == nullptr || size == 0 || size % config_.granularity != 0) return CUDA_ERROR_INVALID_VALUE;
  memmgr::DevicePtr base = fixed;
  // Like the driver, the requested address is a hint.
  if (fixed == 0 || fixed % config_.granularity != 0 || grantElsewhere_.contains(fixed) ||
      size > std::numeric_limits<memmgr::DevicePtr>::max() - fixed ||
      anyOverlap(reservations_, fixed, size)) {
    base = nextElsewhere_;
    nextElsewhere_ += size;
  }
  reservations_.emplace(base, size);
  *got = base;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::freeReservation(memmgr::DevicePtr base, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFreeReservation)) return *injected;
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != size) {
    return misused("freeReservation of " + hex(size) + " bytes at " + hex(base) + " matches no reservation",
                   CUDA_ERROR_INVALID_VALUE);
  }
  if (segmentOverlaps(base, size)) {
    return misused("freeReservation at " + hex(base) + " while memory is mapped in it",
                   CUDA_ERROR_INVALID_VALUE);
  }
  reservations_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::createPhysical(std::size_t size, memmgr::PhysicalHandle* handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kCreatePhysical)) return *injected;
  if (handle == nullptr || size == 0 || size % config_.granularity != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > config_.memoryBytes - physicalBytes_) return CUDA_ERROR_OUT_OF_MEMORY;
  auto memory = std::make_shared<fake::HostBuffer>(size);
  if (memory->data() == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  physicalBytes_ += size;
  *handle = nextHandle_++;
  physical_.emplace(*handle, Physical{size, std::move(memory)});
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::exportToFd(memmgr::PhysicalHandle handle, int* fd) {
  std::lock_guard lock(mutex_);
  auto it = physical_.find(handle);
  if (it == physical_.end() || fd == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int exported = ::memfd_create("agileos-fake-export", MFD_CLOEXEC);
  if (exported < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (::ftruncate(exported, static_cast<off_t>(it->second.size)) != 0) {
    ::close(exported);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *fd = exported;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::releasePhysical(memmgr::PhysicalHandle handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kReleasePhysical)) return *injected;
  auto it = physical_.find(handle);
  if (it == physical_.end()) {
    return misused("releasePhysical of unknown handle " + std::to_string(handle), CUDA_ERROR_INVALID_VALUE);
  }
  // As in the driver, mappings of a released handle keep its memory until they are unmapped.
  physicalBytes_ -= it->second.size;
  physical_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::map(memmgr::DevicePtr va, std::size_t size, memmgr::PhysicalHandle handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kMap)) return *injected;
  const std::string where = hex(size) + " bytes at " + hex(va);
  auto physical = physical_.find(handle);
  if (physical == physical_.end())
    return misused("map of unknown handle: " + where, CUDA_ERROR_INVALID_VALUE);
  if (size == 0 || size > physical->second.size || size % config_.granularity != 0 ||
      va % config_.granularity != 0) {
    return misused("map of a bad size or alignment: " + where, CUDA_ERROR_INVALID_VALUE);
  }
  auto reservation = reservations_.upper_bound(va);
  if (reservation == reservations_.begin() ||
      std::prev(reservation)->first + std::prev(reservation)->second < va + size) {
    return misused("map outside any reservation: " + where, CUDA_ERROR_INVALID_VALUE);
  }
  if (segmentOverlaps(va, size))
    return misused("map over a mapped range: " + where, CUDA_ERROR_INVALID_VALUE);
  segments_.emplace(va, Segment{size, physical->second.memory, handle, false});
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::setAccess(memmgr::DevicePtr va, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSetAccess)) return *injected;
  // The range must consist of whole mappings, back to back.
  std::vector<Segment*> covered;
  memmgr::DevicePtr cursor = va;
  for (auto it = segments_.find(va); it != segments_.end() && cursor < va + size; ++it) {
    if (it->first != cursor || it->second.handle == 0) break;
    covered.push_back(&it->second);
    cursor += it->second.size;
  }
  if (size == 0 || cursor != va + size) {
    return misused("setAccess of " + hex(size) + " bytes at " + hex(va) + " is not whole mappings",
                   CUDA_ERROR_INVALID_VALUE);
  }
  for (Segment* segment : covered) segment->accessible = true;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::unmap(memmgr::DevicePtr va, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kUnmap)) return *injected;
  const std::string where = hex(size) + " bytes at " + hex(va);
  auto first = segments_.lower_bound(va);
  if (first != segments_.begin() && std::prev(first)->first + std::prev(first)->second.size > va) {
    return misused("unmap of part of a mapping: " + where, CUDA_ERROR_INVALID_VALUE);
  }
  auto last = first;
  for (; last != segments_.end() && last->first < va + size; ++last) {
    if (last->second.handle == 0 || last->first + last->second.size > va + size) {
      return misused("unmap of part of a mapping: " + where, CUDA_ERROR_INVALID_VALUE);
    }
  }
  if (first == last) {
    // The driver reports success for this; a memory manager that does it has lost track.
    return misused("unmap of an unmapped range: " + where, CUDA_SUCCESS);
  }
  segments_.erase(first, last);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::fill(memmgr::DevicePtr va, std::uint8_t value, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFill)) return *injected;
  const auto pieces = resolve(va, size);
  if (!pieces) {
    return misused("fill of " + hex(size) + " bytes at " + hex(va) + " touches inaccessible memory",
                   CUDA_ERROR_INVALID_VALUE);
  }
  for (const Piece& piece : *pieces) fake::HostBuffer::fill(piece.data, value, piece.bytes);
  return CUDA_SUCCESS;
}

// Device memory -----------------------------------------------------------------------

std::optional<std::vector<FakeGpuBackend::Piece>> FakeGpuBackend::resolve(CUdeviceptr va,
                                                                          std::size_t bytes) const {
  std::vector<Piece> pieces;
  if (bytes > std::numeric_limits<CUdeviceptr>::max() - va) return std::nullopt;
  const CUdeviceptr end = va + bytes;
  CUdeviceptr cursor = va;
  while (cursor < end) {
    auto after = segments_.upper_bound(cursor);
    if (after == segments_.begin()) return std::nullopt;
    const auto& [base, segment] = *std::prev(after);
    if (cursor >= base + segment.size || !segment.accessible) return std::nullopt;
    const std::size_t take = std::min<CUdeviceptr>(end, base + segment.size) - cursor;
    pieces.push_back({segment.memory->data() + (cursor - base), take});
    cursor += take;
  }
  return pieces;
}

CUresult FakeGpuBackend::transfer(FakeTransfer record, const void* hostSrc, void* hostDst,
                                  std::uint8_t value) {
  std::function<void(const FakeTransfer&)> hook;
  {
    std::lock_guard lock(mutex_);
    hook = beforeTransfer_;
  }
  if (hook) hook(record);

  std::lock_guard lock(mutex_);
  static constexpr FakeGpuCall kCallOf[] = {FakeGpuCall::kCopyHostToDevice, FakeGpuCall::kCopyDeviceToHost,
                                            FakeGpuCall::kCopyDeviceToDevice, FakeGpuCall::kMemsetBytes};
  using Kind = FakeTransfer::Kind;
  auto run = [&]() -> CUresult {
    if (auto injected = enter(kCallOf[static_cast<int>(record.kind)])) return *injected;
    if (!streamUsable(record.stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (record.bytes == 0) return CUDA_SUCCESS;
    if ((record.kind == Kind::kHostToDevice && hostSrc == nullptr) ||
        (record.kind == Kind::kDeviceToHost && hostDst == nullptr)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const bool writesDevice = record.kind != Kind::kDeviceToHost;
    const bool readsDevice = record.kind == Kind::kDeviceToHost || record.kind == Kind::kDeviceToDevice;
    std::optional<std::vector<Piece>> dst, src;
    if (writesDevice && !(dst = resolve(record.dst, record.bytes))) return CUDA_ERROR_INVALID_VALUE;
    if (readsDevice && !(src = resolve(record.src, record.bytes))) return CUDA_ERROR_INVALID_VALUE;

    std::vector<std::uint8_t> staged;  // device-to-device goes through a copy: the ranges may overlap
    if (record.kind == Kind::kDeviceToDevice) {
      staged.resize(record.bytes);
      hostDst = staged.data();
      hostSrc = staged.data();
    }
    if (src) {
      auto* out = static_cast<std::uint8_t*>(hostDst);
      for (const Piece& piece : *src) out = std::copy_n(piece.data, piece.bytes, out);
    }
    if (dst) {
      const auto* in = static_cast<const std::uint8_t*>(hostSrc);
      for (const Piece& piece : *dst) {
        if (record.kind == Kind::kMemset) {
          fake::HostBuffer::fill(piece.data, value, piece.bytes);
        } else {
          std::copy_n(in, piece.bytes, piece.data);
          in += piece.bytes;
        }
      }
    }
    return CUDA_SUCCESS;
  };
  record.result = run();
  transfers_.push_back(record);
  return record.result;
}

CUresult FakeGpuBackend::copyHostToDevice(CUdeviceptr dst, const void* src, std::size_t bytes,
                                          CUstream stream, bool async) {
  return transfer({FakeTransfer::Kind::kHostToDevice, dst, 0, bytes, stream, async}, src, nullptr, 0);
}

CUresult FakeGpuBackend::copyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                                          bool async) {
  return transfer({FakeTransfer::Kind::kDeviceToHost, 0, src, bytes, stream, async}, nullptr, dst, 0);
}

CUresult FakeGpuBackend::enqueueCopyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes,
                                                 CUstream stream) {
  // Nothing is ever pending on the fake GPU, so "enqueued" is "done".
  return transfer({FakeTransfer::Kind::kDeviceToHost, 0, src, bytes, stream, true}, nullptr, dst, 0);
}

CUresult FakeGpuBackend::hostRegister(void* p, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kHostRegister)) return *injected;
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  if (p == nullptr || bytes == 0 || base % 4096 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!registeredHost_.emplace(base, bytes).second) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::hostRegisterMapped(void* p, std::size_t bytes, bool ioMemory, CUdeviceptr* device) {
  (void)ioMemory;
  const CUresult result = hostRegister(p, bytes);
  if (result == CUDA_SUCCESS) *device = reinterpret_cast<CUdeviceptr>(p);  // unified addressing
  return result;
}

CUresult FakeGpuBackend::hostUnregister(void* p) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kHostUnregister)) return *injected;
  if (registeredHost_.erase(reinterpret_cast<std::uintptr_t>(p)) == 0)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return CUDA_SUCCESS;
}

std::size_t FakeGpuBackend::registeredHostRanges() const {
  std::lock_guard lock(mutex_);
  return registeredHost_.size();
}

CUresult FakeGpuBackend::copyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                                            CUstream stream, bool async) {
  return transfer({FakeTransfer::Kind::kDeviceToDevice, dst, src, bytes, stream, async}, nullptr, nullptr, 0);
}

CUresult FakeGpuBackend::memsetBytes(CUdeviceptr dst, std::uint8_t value, std::size_t bytes, CUstream stream,
                                     bool async) {
  return transfer({FakeTransfer::Kind::kMemset, dst, 0, bytes, stream, async}, nullptr, nullptr, value);
}

}  // namespace agileos::worker
