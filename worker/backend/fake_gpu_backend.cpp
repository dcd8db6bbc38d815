#include "worker/backend/fake_gpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace agileos::worker {
namespace {

// Driver behaviour measured on an H200 (driver 580, CUDA 13.0).
constexpr int kLeastStreamPriority = 0;
constexpr int kGreatestStreamPriority = -5;
constexpr int kDefaultMaxDynamicSharedBytes = 48 << 10;
constexpr int kOptInMaxDynamicSharedBytes = 227 << 10;
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDimZ = 64;
constexpr unsigned kMaxGridDimX = 0x7fffffffu;
constexpr unsigned kMaxGridDimYZ = 65535;
constexpr std::size_t kModuleDataAlignment = 256;
constexpr int kFakeRegistersPerThread = 16;

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string hex(const void* handle) { return hex(reinterpret_cast<std::uintptr_t>(handle)); }

std::uint64_t alignUp(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool isSpecialStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

DeviceDescription describe(const FakeGpuConfig& config) {
  DeviceDescription description;
  description.ordinal = 0;
  description.name = config.name;
  description.uuid = std::string("AgileOS-FakeGPU!", 16);
  description.totalGlobalMem = config.memoryBytes;
  description.driverVersion = 13000;
  description.computeMajor = config.computeMajor;
  description.computeMinor = config.computeMinor;
  description.attributes = {
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, static_cast<int>(kMaxThreadsPerBlock)},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, static_cast<int>(kMaxBlockDimZ)},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, static_cast<int>(kMaxGridDimX)},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, static_cast<int>(kMaxGridDimYZ)},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, static_cast<int>(kMaxGridDimYZ)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, kDefaultMaxDynamicSharedBytes},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, kOptInMaxDynamicSharedBytes},
      {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 << 10},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, config.computeMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, config.computeMinor},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
  };
  return description;
}

}  // namespace

const char* toString(FakeGpuCall call) {
  static constexpr const char* kNames[] = {
      "init", "allocationGranularity", "reserve", "freeReservation", "createPhysical", "releasePhysical",
      "map", "setAccess", "unmap", "fill", "synchronizeContext", "getLimit", "setLimit", "memGetInfo",
      "copyHostToDevice", "copyDeviceToHost", "copyDeviceToDevice", "memsetBytes", "streamCreate",
      "streamDestroy", "streamSynchronize", "streamQuery", "streamWaitEvent", "streamPriorityRange",
      "eventCreate", "eventDestroy", "eventRecord", "eventSynchronize", "eventQuery", "eventElapsedTime",
      "moduleLoad", "moduleUnload", "moduleGetFunction", "moduleGetGlobal", "functionParamInfo",
      "functionGetAttribute", "functionSetAttribute", "functionSetCacheConfig", "occupancyMaxActiveBlocks",
      "launchKernel"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(FakeGpuCall::kCount));
  const auto index = static_cast<std::size_t>(call);
  return index < std::size(kNames) ? kNames[index] : "invalid";
}

// Anonymous memory committed by the kernel on first touch, so a large emulated
// allocation costs host memory only for the bytes a test writes.
class FakeGpuBackend::HostBuffer {
 public:
  explicit HostBuffer(std::size_t size) : size_(std::max<std::size_t>(size, 1)) {
    void* memory = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
    data_ = memory == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(memory);
  }
  ~HostBuffer() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

  // Zero fills hand whole pages back to the kernel (they read as zero again), so
  // scrubbing a large mapping does not commit it.
  static void fill(std::uint8_t* begin, std::uint8_t value, std::size_t bytes) {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const auto first = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t pagesBegin = alignUp(first, page);
    const std::uintptr_t pagesEnd = (first + bytes) / page * page;
    if (value != 0 || pagesEnd <= pagesBegin ||
        ::madvise(reinterpret_cast<void*>(pagesBegin), pagesEnd - pagesBegin, MADV_DONTNEED) != 0) {
      std::memset(begin, value, bytes);
      return;
    }
    std::memset(begin, 0, pagesBegin - first);
    std::memset(reinterpret_cast<void*>(pagesEnd), 0, first + bytes - pagesEnd);
  }

 private:
  std::size_t size_;
  std::uint8_t* data_;
};

FakeGpuBackend::FakeGpuBackend(FakeGpuConfig config)
    : config_(std::move(config)),
      description_(describe(config_)),
      callsByMethod_(static_cast<std::size_t>(FakeGpuCall::kCount), 0),
      limits_{{CU_LIMIT_STACK_SIZE, 1024},
              {CU_LIMIT_PRINTF_FIFO_SIZE, 8650752},
              {CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20},
              {CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 2048},
              {CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 64},
              {CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 11796480}} {}

FakeGpuBackend::~FakeGpuBackend() = default;

std::optional<CUresult> FakeGpuBackend::enter(FakeGpuCall call) {
  ++calls_;
  ++callsByMethod_[static_cast<std::size_t>(call)];
  if (call != FakeGpuCall::kInit && !initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (auto it = failNext_.find(call); it != failNext_.end()) {
    const CUresult result = it->second;
    failNext_.erase(it);
    return result;
  }
  return std::nullopt;
}

CUresult FakeGpuBackend::misused(std::string what, CUresult result) {
  misuse_.push_back(std::move(what));
  return result;
}

// Context ---------------------------------------------------------------------------

CUresult FakeGpuBackend::init(int device, std::string* error) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kInit)) return *injected;
  if (device != 0) {
    if (error != nullptr) *error = "the fake GPU backend has only device 0";
    return CUDA_ERROR_INVALID_DEVICE;
  }
  initialized_ = true;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::synchronizeContext() {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSynchronizeContext)) return *injected;
  return CUDA_SUCCESS;  // nothing is ever pending
}

CUresult FakeGpuBackend::getLimit(CUlimit limit, std::size_t* value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kGetLimit)) return *injected;
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) return CUDA_ERROR_UNSUPPORTED_LIMIT;  // as on sm_90
  auto it = limits_.find(limit);
  if (it == limits_.end() || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *value = it->second;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::setLimit(CUlimit limit, std::size_t value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSetLimit)) return *injected;
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  auto it = limits_.find(limit);
  if (it == limits_.end()) return CUDA_ERROR_INVALID_VALUE;
  it->second = value;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::memGetInfo(std::size_t* free, std::size_t* total) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kMemGetInfo)) return *injected;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = config_.memoryBytes - physicalBytes_;
  *total = config_.memoryBytes;
  return CUDA_SUCCESS;
}

// VMM ---------------------------------------------------------------------------------

bool FakeGpuBackend::anyOverlap(const std::map<memmgr::DevicePtr, std::size_t>& ranges, memmgr::DevicePtr base,
                                std::size_t size) {
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
      size > std::numeric_limits<memmgr::DevicePtr>::max() - fixed || anyOverlap(reservations_, fixed, size)) {
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
    return misused("freeReservation at " + hex(base) + " while memory is mapped in it", CUDA_ERROR_INVALID_VALUE);
  }
  reservations_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::createPhysical(std::size_t size, memmgr::PhysicalHandle* handle) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kCreatePhysical)) return *injected;
  if (handle == nullptr || size == 0 || size % config_.granularity != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > config_.memoryBytes - physicalBytes_) return CUDA_ERROR_OUT_OF_MEMORY;
  auto memory = std::make_shared<HostBuffer>(size);
  if (memory->data() == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  physicalBytes_ += size;
  *handle = nextHandle_++;
  physical_.emplace(*handle, Physical{size, std::move(memory)});
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
  if (physical == physical_.end()) return misused("map of unknown handle: " + where, CUDA_ERROR_INVALID_VALUE);
  if (size == 0 || size > physical->second.size || size % config_.granularity != 0 ||
      va % config_.granularity != 0) {
    return misused("map of a bad size or alignment: " + where, CUDA_ERROR_INVALID_VALUE);
  }
  auto reservation = reservations_.upper_bound(va);
  if (reservation == reservations_.begin() ||
      std::prev(reservation)->first + std::prev(reservation)->second < va + size) {
    return misused("map outside any reservation: " + where, CUDA_ERROR_INVALID_VALUE);
  }
  if (segmentOverlaps(va, size)) return misused("map over a mapped range: " + where, CUDA_ERROR_INVALID_VALUE);
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
  for (const Piece& piece : *pieces) HostBuffer::fill(piece.data, value, piece.bytes);
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

bool FakeGpuBackend::streamUsable(CUstream stream) {
  if (isSpecialStream(stream) || streams_.contains(stream)) return true;
  misuse_.push_back("use of a dead stream " + hex(stream));
  return false;
}

CUresult FakeGpuBackend::transfer(FakeTransfer record, const void* hostSrc, void* hostDst, std::uint8_t value) {
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
          HostBuffer::fill(piece.data, value, piece.bytes);
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

CUresult FakeGpuBackend::copyHostToDevice(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream,
                                          bool async) {
  return transfer({FakeTransfer::Kind::kHostToDevice, dst, 0, bytes, stream, async}, src, nullptr, 0);
}

CUresult FakeGpuBackend::copyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                                          bool async) {
  return transfer({FakeTransfer::Kind::kDeviceToHost, 0, src, bytes, stream, async}, nullptr, dst, 0);
}

CUresult FakeGpuBackend::copyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                                            CUstream stream, bool async) {
  return transfer({FakeTransfer::Kind::kDeviceToDevice, dst, src, bytes, stream, async}, nullptr, nullptr, 0);
}

CUresult FakeGpuBackend::memsetBytes(CUdeviceptr dst, std::uint8_t value, std::size_t bytes, CUstream stream,
                                     bool async) {
  return transfer({FakeTransfer::Kind::kMemset, dst, 0, bytes, stream, async}, nullptr, nullptr, value);
}

// Streams and events ---------------------------------------------------------------------

CUresult FakeGpuBackend::streamCreate(unsigned flags, int priority, CUstream* stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamCreate)) return *injected;
  if (stream == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  (void)priority;  // the driver clamps priorities into the range; nothing here depends on it
  *stream = reinterpret_cast<CUstream>(nextObject_ += 0x10);
  streams_.insert(*stream);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamDestroy(CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamDestroy)) return *injected;
  if (streams_.erase(stream) == 0) {
    return misused("streamDestroy of a stream that is not live: " + hex(stream), CUDA_ERROR_INVALID_HANDLE);
  }
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamSynchronize(CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamSynchronize)) return *injected;
  return streamUsable(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult FakeGpuBackend::streamQuery(CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamQuery)) return *injected;
  return streamUsable(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult FakeGpuBackend::streamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamWaitEvent)) return *injected;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!events_.contains(event)) return misused("streamWaitEvent on a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  if ((flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamPriorityRange(int* least, int* greatest) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamPriorityRange)) return *injected;
  if (least != nullptr) *least = kLeastStreamPriority;
  if (greatest != nullptr) *greatest = kGreatestStreamPriority;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventCreate(unsigned flags, CUevent* event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventCreate)) return *injected;
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (event == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *event = reinterpret_cast<CUevent>(nextObject_ += 0x10);
  events_.emplace(*event, Event{flags, std::nullopt});
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventDestroy(CUevent event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventDestroy)) return *injected;
  if (events_.erase(event) == 0) {
    return misused("eventDestroy of an event that is not live: " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  }
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventRecord(CUevent event, CUstream stream, unsigned flags) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventRecord)) return *injected;
  auto it = events_.find(event);
  if (it == events_.end()) return misused("eventRecord of a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags == CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_ILLEGAL_STATE;  // only valid during graph capture
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  it->second.recordedAt = ++clock_;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventSynchronize(CUevent event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventSynchronize)) return *injected;
  if (!events_.contains(event)) return misused("eventSynchronize of a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventQuery(CUevent event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventQuery)) return *injected;
  if (!events_.contains(event)) return misused("eventQuery of a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventElapsedTime)) return *injected;
  auto first = events_.find(start);
  auto second = events_.find(end);
  if (first == events_.end() || second == events_.end()) {
    return misused("eventElapsedTime with a dead event", CUDA_ERROR_INVALID_HANDLE);
  }
  if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Measured: unrecorded events and events without timing give CUDA_ERROR_INVALID_HANDLE.
  for (const Event* event : {&first->second, &second->second}) {
    if (!event->recordedAt || (event->flags & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  *milliseconds = (static_cast<float>(*second->second.recordedAt) - static_cast<float>(*first->second.recordedAt)) *
                  kEventTickMs;
  return CUDA_SUCCESS;
}

// Modules --------------------------------------------------------------------------------

CUresult FakeGpuBackend::moduleLoad(const void* image, CUmodule* module, std::string* log) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleLoad)) return *injected;
  auto fail = [&](CUresult result, std::string why) {
    if (log != nullptr) *log = "FakeGpuBackend: " + why;
    return result;
  };
  if (image == nullptr || module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* text = static_cast<const char*>(image);
  // Byte by byte, so a short NUL-terminated text is never read past its end.
  if (text[0] == '\x7f' && text[1] == 'E' && text[2] == 'L' && text[3] == 'F') {
    return fail(CUDA_ERROR_INVALID_IMAGE, "ELF (SASS) images cannot be emulated; load PTX");
  }
  const fake::PtxSymbols symbols = fake::scanPtxSymbols(text);
  if (!symbols.ok) {
    // Measured: text the driver does not recognise at all gives CUDA_ERROR_INVALID_IMAGE.
    return fail(symbols.versionMajor == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_INVALID_PTX, symbols.error);
  }
  const int deviceSm = config_.computeMajor * 10 + config_.computeMinor;
  if (symbols.targetSm > deviceSm) {
    return fail(CUDA_ERROR_INVALID_PTX, "PTX targets sm_" + std::to_string(symbols.targetSm) +
                                            ", above the device's sm_" + std::to_string(deviceSm));
  }
  std::set<std::string> names;
  for (const fake::PtxEntry& entry : symbols.entries) {
    if (!names.insert(entry.name).second) return fail(CUDA_ERROR_INVALID_PTX, "duplicate symbol " + entry.name);
  }
  for (const fake::PtxVariable& variable : symbols.variables) {
    if (!names.insert(variable.name).second) return fail(CUDA_ERROR_INVALID_PTX, "duplicate symbol " + variable.name);
  }

  std::uint64_t variableBytes = 0;
  std::vector<std::shared_ptr<HostBuffer>> storage;
  for (const fake::PtxVariable& variable : symbols.variables) {
    variableBytes += variable.size;  // each is below 2^40 (the scanner's limit): no overflow
    if (variableBytes > config_.memoryBytes) return fail(CUDA_ERROR_OUT_OF_MEMORY, "module variables too large");
    storage.push_back(std::make_shared<HostBuffer>(variable.size));
    if (storage.back()->data() == nullptr) return fail(CUDA_ERROR_OUT_OF_MEMORY, "no host memory for variables");
  }

  // Nothing can fail from here on.
  const auto handle = reinterpret_cast<CUmodule>(nextObject_ += 0x10);
  Module& loaded = modules_[handle];
  loaded.ptxVersion = symbols.versionMajor * 10 + symbols.versionMinor;
  for (const fake::PtxEntry& entry : symbols.entries) {
    const auto function = reinterpret_cast<CUfunction>(nextObject_ += 0x10);
    loaded.functions.emplace(entry.name, function);
    functions_.emplace(function, Function{handle, entry.name, entry.params, {}});
  }
  for (std::size_t i = 0; i < symbols.variables.size(); ++i) {
    const fake::PtxVariable& variable = symbols.variables[i];
    const CUdeviceptr address = nextModuleData_;
    // A gap after every variable, so an overrun lands in unmapped memory.
    nextModuleData_ = alignUp(address + variable.size, kModuleDataAlignment) + kModuleDataAlignment;
    segments_.emplace(address, Segment{variable.size, std::move(storage[i]), 0, true});
    loaded.variables.emplace(variable.name, std::make_pair(address, variable.size));
  }
  *module = handle;
  return CUDA_SUCCESS;
}

void FakeGpuBackend::unloadLocked(CUmodule module) {
  auto it = modules_.find(module);
  for (const auto& [name, function] : it->second.functions) functions_.erase(function);
  for (const auto& [name, range] : it->second.variables) segments_.erase(range.first);
  modules_.erase(it);
}

CUresult FakeGpuBackend::moduleUnload(CUmodule module) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleUnload)) return *injected;
  if (!modules_.contains(module)) return misused("moduleUnload of a dead module " + hex(module), CUDA_ERROR_INVALID_HANDLE);
  unloadLocked(module);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::moduleGetFunction(CUmodule module, const char* name, CUfunction* function) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleGetFunction)) return *injected;
  auto it = modules_.find(module);
  if (it == modules_.end()) return misused("moduleGetFunction on a dead module " + hex(module), CUDA_ERROR_INVALID_HANDLE);
  if (name == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto found = it->second.functions.find(name);
  if (found == it->second.functions.end()) return CUDA_ERROR_NOT_FOUND;
  *function = found->second;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::moduleGetGlobal(CUmodule module, const char* name, CUdeviceptr* dptr,
                                         std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleGetGlobal)) return *injected;
  auto it = modules_.find(module);
  if (it == modules_.end()) return misused("moduleGetGlobal on a dead module " + hex(module), CUDA_ERROR_INVALID_HANDLE);
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto found = it->second.variables.find(name);
  if (found == it->second.variables.end()) return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = found->second.first;
  if (bytes != nullptr) *bytes = found->second.second;
  return CUDA_SUCCESS;
}

FakeGpuBackend::Function* FakeGpuBackend::liveFunction(CUfunction function, const char* what) {
  auto it = functions_.find(function);
  if (it != functions_.end()) return &it->second;
  misuse_.push_back(std::string(what) + " on a dead function " + hex(function));
  return nullptr;
}

CUresult FakeGpuBackend::functionParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                           std::size_t* size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionParamInfo)) return *injected;
  const Function* live = liveFunction(function, "functionParamInfo");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= live->params.size()) return CUDA_ERROR_INVALID_VALUE;  // past the last parameter
  if (offset != nullptr) *offset = live->params[index].offset;
  if (size != nullptr) *size = live->params[index].size;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::functionGetAttribute(CUfunction_attribute attribute, CUfunction function, int* value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionGetAttribute)) return *injected;
  const Function* live = liveFunction(function, "functionGetAttribute");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (value == nullptr || attribute < 0 || attribute >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  if (auto set = live->attributes.find(attribute); set != live->attributes.end()) {
    *value = set->second;
    return CUDA_SUCCESS;
  }
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = static_cast<int>(kMaxThreadsPerBlock);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = kFakeRegistersPerThread;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *value = modules_.at(live->module).ptxVersion;
      break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = config_.computeMajor * 10 + config_.computeMinor;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = kDefaultMaxDynamicSharedBytes;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *value = -1;
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::functionSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionSetAttribute)) return *injected;
  Function* live = liveFunction(function, "functionSetAttribute");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kOptInMaxDynamicSharedBytes) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (value < 0) return CUDA_ERROR_INVALID_VALUE;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  live->attributes[attribute] = value;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::functionSetCacheConfig(CUfunction function, CUfunc_cache config) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionSetCacheConfig)) return *injected;
  if (liveFunction(function, "functionSetCacheConfig") == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::occupancyMaxActiveBlocks(int* blocks, CUfunction function, int blockSize,
                                                  std::size_t dynamicSmem, unsigned flags) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kOccupancyMaxActiveBlocks)) return *injected;
  if (liveFunction(function, "occupancyMaxActiveBlocks") == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (blocks == nullptr || (flags & ~static_cast<unsigned>(CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Measured: a block size the function cannot run gives 0 blocks, not an error.
  const bool runnable = blockSize > 0 && static_cast<unsigned>(blockSize) <= kMaxThreadsPerBlock &&
                        dynamicSmem <= static_cast<std::size_t>(kOptInMaxDynamicSharedBytes);
  *blocks = runnable ? std::min(2048 / blockSize, 32) : 0;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::launchKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                                      void** params) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kLaunchKernel)) return *injected;
  const Function* live = liveFunction(function, "launchKernel");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  const std::uint64_t threads = std::uint64_t{config.blockX} * config.blockY * config.blockZ;
  if (config.gridX == 0 || config.gridY == 0 || config.gridZ == 0 || threads == 0 ||
      config.gridX > kMaxGridDimX || config.gridY > kMaxGridDimYZ || config.gridZ > kMaxGridDimYZ ||
      config.blockZ > kMaxBlockDimZ || threads > kMaxThreadsPerBlock) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int maxDynamicShared = kDefaultMaxDynamicSharedBytes;
  if (auto set = live->attributes.find(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
      set != live->attributes.end()) {
    maxDynamicShared = set->second;
  }
  if (config.sharedMemBytes > static_cast<unsigned>(maxDynamicShared)) return CUDA_ERROR_INVALID_VALUE;

  FakeLaunch launch{function, live->module, live->name, config, stream, {}};
  std::size_t bufferSize = 0;
  for (const fake::PtxParam& param : live->params) bufferSize = std::max<std::size_t>(bufferSize, param.offset + param.size);
  launch.params.assign(bufferSize, '\0');
  for (std::size_t i = 0; i < live->params.size(); ++i) {
    if (params == nullptr || params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(launch.params.data() + live->params[i].offset, params[i], live->params[i].size);
  }
  launches_.push_back(std::move(launch));
  return CUDA_SUCCESS;
}

// Configuration and observations ---------------------------------------------------------

void FakeGpuBackend::grantElsewhere(memmgr::DevicePtr fixed) {
  std::lock_guard lock(mutex_);
  grantElsewhere_.insert(fixed);
}

void FakeGpuBackend::failNext(FakeGpuCall call, CUresult result) {
  std::lock_guard lock(mutex_);
  failNext_[call] = result;
}

void FakeGpuBackend::setBeforeTransferHook(std::function<void(const FakeTransfer&)> hook) {
  std::lock_guard lock(mutex_);
  beforeTransfer_ = std::move(hook);
}

bool FakeGpuBackend::readDevice(CUdeviceptr src, void* dst, std::size_t bytes) const {
  std::lock_guard lock(mutex_);
  const auto pieces = resolve(src, bytes);
  if (!pieces) return false;
  auto* out = static_cast<std::uint8_t*>(dst);
  for (const Piece& piece : *pieces) out = std::copy_n(piece.data, piece.bytes, out);
  return true;
}

bool FakeGpuBackend::writeDevice(CUdeviceptr dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const auto pieces = resolve(dst, bytes);
  if (!pieces) return false;
  const auto* in = static_cast<const std::uint8_t*>(src);
  for (const Piece& piece : *pieces) {
    std::copy_n(in, piece.bytes, piece.data);
    in += piece.bytes;
  }
  return true;
}

void FakeGpuBackend::clearRecords() {
  std::lock_guard lock(mutex_);
  transfers_.clear();
  launches_.clear();
}

std::uint64_t FakeGpuBackend::callCount(FakeGpuCall call) const {
  std::lock_guard lock(mutex_);
  const auto index = static_cast<std::size_t>(call);
  return index < callsByMethod_.size() ? callsByMethod_[index] : 0;
}

std::uint64_t FakeGpuBackend::callCount() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<FakeTransfer> FakeGpuBackend::transfers() const {
  std::lock_guard lock(mutex_);
  return transfers_;
}

std::vector<FakeLaunch> FakeGpuBackend::launches() const {
  std::lock_guard lock(mutex_);
  return launches_;
}

std::vector<std::string> FakeGpuBackend::misuse() const {
  std::lock_guard lock(mutex_);
  return misuse_;
}

std::size_t FakeGpuBackend::liveReservations() const {
  std::lock_guard lock(mutex_);
  return reservations_.size();
}

std::size_t FakeGpuBackend::livePhysicalHandles() const {
  std::lock_guard lock(mutex_);
  return physical_.size();
}

std::size_t FakeGpuBackend::liveMappings() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(segments_.begin(), segments_.end(), [](const auto& entry) { return entry.second.handle != 0; }));
}

std::uint64_t FakeGpuBackend::physicalBytes() const {
  std::lock_guard lock(mutex_);
  return physicalBytes_;
}

std::size_t FakeGpuBackend::liveStreams() const {
  std::lock_guard lock(mutex_);
  return streams_.size();
}

std::size_t FakeGpuBackend::liveEvents() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::size_t FakeGpuBackend::liveModules() const {
  std::lock_guard lock(mutex_);
  return modules_.size();
}

std::optional<std::pair<CUdeviceptr, std::size_t>> FakeGpuBackend::moduleVariable(const std::string& name) const {
  std::lock_guard lock(mutex_);
  for (const auto& [handle, module] : modules_) {
    if (auto it = module.variables.find(name); it != module.variables.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace agileos::worker
