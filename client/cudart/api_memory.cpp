// Memory management and copies (cudart exports). Every device pointer is
// checked by the worker; the checks here only reproduce the errors cudart
// itself gives before reaching the device.
#include <cuda_runtime_api.h>

#include <cstring>

#include "client/common/log.h"
#include "client/session/copy_batches.h"
#include "client/session/copy_engine.h"
#include "client/session/device_allocations.h"
#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/host_allocations.h"
#include "client/session/managed_hints.h"
#include "client/session/memory_calls.h"
#include "client/session/module_registry.h"
#include "client/session/resource_epoch.h"
#include "client/session/streams.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

// cudaMallocPitch rows are aligned like the driver's pitched allocations.
constexpr std::size_t kPitchAlignment = 512;

cudaError_t requireConnection() {
  cudaError_t error = cudaSuccess;
  deviceInfo(&error);
  return error;
}

bool validKind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

cudaError_t memcpyCommon(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                         DefaultStream spelling, bool async) {
  bindPrimaryContextIfNoneCurrent();
  if (!validKind(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  CopyTarget target;
  target.async = async || spelling == DefaultStream::kPerThread;
  target.returnsEarly = async;
  if (cudaError_t error = resolveStream(stream, spelling, &target.stream); error != cudaSuccess) {
    return recordError(error);
  }
  return recordError(copyByKind(dst, src, count, kind, target));
}

// cudaMemcpyBatchAsync: each copy as cudaMemcpyAsync (cudaMemcpyDefault) on the stream, in order,
// once the batch's own arguments (client/session/copy_batches.h, and the stream) are checked:
// nothing is copied when one of those is bad. A copy refused on its own (a range that is not the
// client's) ends the batch with its error; the copies before it were issued. A batch with a source
// read only during the call is complete before the call returns: the stream is synchronized.
cudaError_t memcpyBatch(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                        const cudaMemcpyAttributes* attrs, const size_t* attrsIdxs, size_t numAttrs,
                        cudaStream_t stream, DefaultStream spelling) {
  bindPrimaryContextIfNoneCurrent();
  bool duringCall = false;
  if (cudaError_t error = checkCopyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, &duringCall);
      error != cudaSuccess)
    return recordError(error);
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (token == 0) return recordError(cudaErrorInvalidValue);  // the legacy stream is not allowed
  for (size_t i = 0; i < count; ++i) {
    if (sizes[i] == 0) continue;
    if (cudaError_t error =
            memcpyCommon(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream, spelling, true);
        error != cudaSuccess) {
      return error;
    }
  }
  if (!duringCall) return cudaSuccess;
  return recordError(spelling == DefaultStream::kPerThread ? cudaStreamSynchronize_ptsz(stream)
                                                           : cudaStreamSynchronize(stream));
}

cudaError_t memsetCommon(void* devPtr, int value, size_t count, cudaStream_t stream, DefaultStream spelling,
                         bool async) {
  bindPrimaryContextIfNoneCurrent();
  CopyTarget target;
  target.async = async || spelling == DefaultStream::kPerThread;
  target.returnsEarly = async;
  if (cudaError_t error = resolveStream(stream, spelling, &target.stream); error != cudaSuccess) {
    return recordError(error);
  }
  if (count == 0) return cudaSuccess;
  return recordError(fillDevice(reinterpret_cast<std::uint64_t>(devPtr), value, count, target));
}

// 2D copies and fills: copy_engine's pitched rows (row by row unless contiguous).
cudaError_t memcpy2DCommon(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                           size_t height, cudaMemcpyKind kind, cudaStream_t stream, DefaultStream spelling,
                           bool async) {
  if (!validKind(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  if (width > dpitch || width > spitch) return recordError(cudaErrorInvalidPitchValue);
  if (width == 0 || height == 0) return cudaSuccess;
  CopyTarget target;
  target.async = async || spelling == DefaultStream::kPerThread;
  target.returnsEarly = async;
  if (cudaError_t error = resolveStream(stream, spelling, &target.stream); error != cudaSuccess) {
    return recordError(error);
  }
  return recordError(copyRows(dst, dpitch, src, spitch, width, height, kind, target));
}

cudaError_t memset2DCommon(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                           cudaStream_t stream, DefaultStream spelling, bool async) {
  if (width > pitch) return recordError(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  CopyTarget target;
  target.async = async || spelling == DefaultStream::kPerThread;
  target.returnsEarly = async;
  if (cudaError_t error = resolveStream(stream, spelling, &target.stream); error != cudaSuccess) {
    return recordError(error);
  }
  return recordError(fillRows(reinterpret_cast<std::uint64_t>(devPtr), pitch, value, width, height, target));
}

cudaError_t symbolAddress(const void* symbol, DeviceVariable* variable) {
  if (symbol == nullptr) return cudaErrorInvalidSymbol;
  return ModuleRegistry::instance().variable(symbol, variable);
}

cudaError_t memcpyToSymbolCommon(const void* symbol, const void* src, size_t count, size_t offset,
                                 cudaMemcpyKind kind, cudaStream_t stream, DefaultStream spelling,
                                 bool async) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return recordError(cudaErrorInvalidMemcpyDirection);
  }
  DeviceVariable variable;
  if (cudaError_t error = symbolAddress(symbol, &variable); error != cudaSuccess) return recordError(error);
  if (offset > variable.size || count > variable.size - offset) return recordError(cudaErrorInvalidValue);
  void* dst = reinterpret_cast<void*>(variable.dptr + offset);
  return memcpyCommon(dst, src, count, kind, stream, spelling, async);
}

cudaError_t memcpyFromSymbolCommon(void* dst, const void* symbol, size_t count, size_t offset,
                                   cudaMemcpyKind kind, cudaStream_t stream, DefaultStream spelling,
                                   bool async) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return recordError(cudaErrorInvalidMemcpyDirection);
  }
  DeviceVariable variable;
  if (cudaError_t error = symbolAddress(symbol, &variable); error != cudaSuccess) return recordError(error);
  if (offset > variable.size || count > variable.size - offset) return recordError(cudaErrorInvalidValue);
  const void* src = reinterpret_cast<const void*>(variable.dptr + offset);
  return memcpyCommon(dst, src, count, kind, stream, spelling, async);
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  bindPrimaryContextIfNoneCurrent();
  if (devPtr == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t dptr = 0;
  const cudaError_t error = allocateDevice(size, &dptr);
  *devPtr = reinterpret_cast<void*>(dptr);
  return recordError(error);
}

cudaError_t cudaFree(void* devPtr) {
  bindPrimaryContextIfNoneCurrent();
  if (devPtr == nullptr) return recordError(requireConnection());  // cudaFree(0) initializes the runtime
  // Managed memory is a host segment of this session, not device memory of the worker's table.
  if (HostAllocations::instance().isManaged(devPtr)) {
    return recordError(HostAllocations::instance().freeManaged(devPtr));
  }
  return recordError(freeDevice(reinterpret_cast<std::uint64_t>(devPtr)));
}

// Managed memory (client/session/host_allocations.h): host memory shared with the worker and
// mapped for the device at the same address. Over gRPC there is none (managedMemory = 0).
cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  bindPrimaryContextIfNoneCurrent();
  if (devPtr == nullptr) return recordError(cudaErrorInvalidValue);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return recordError(cudaErrorInvalidValue);
  if (size == 0) {  // as natively on the H200: success, and no memory
    *devPtr = nullptr;
    return cudaSuccess;
  }
  if (cudaError_t error = requireConnection(); error != cudaSuccess) return recordError(error);
  *devPtr = nullptr;
  return recordError(HostAllocations::instance().allocateManaged(size, flags, devPtr));
}

// Prefetch, advice and stream attachment are hints about where managed memory should live;
// here it lives in host memory the device reaches over the bus and never moves, so there is
// nothing to move once the range is known to be managed memory of this session (as natively, a
// prefetch or advice of other memory is cudaErrorInvalidValue without pageable memory access).
// Advice and prefetch targets are checked and recorded for the range queries
// (client/session/managed_hints.h, shared with the driver shim).
static cudaError_t managedHint(const void* devPtr, size_t count) {
  if (count == 0 || !HostAllocations::instance().isManaged(devPtr, count)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

static cudaError_t prefetchCommon(const void* devPtr, size_t count, cudaMemLocation location, unsigned flags,
                                  cudaStream_t stream, DefaultStream spelling) {
  bindPrimaryContextIfNoneCurrent();
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (flags != 0) return recordError(cudaErrorInvalidValue);
  return recordError(prefetchManaged(devPtr, count, enumBits(location.type), location.id));
}

cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, struct cudaMemLocation location,
                                 unsigned int flags, cudaStream_t stream) {
  return prefetchCommon(devPtr, count, location, flags, stream, DefaultStream::kLegacy);
}
cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count, struct cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream) {
  return prefetchCommon(devPtr, count, location, flags, stream, DefaultStream::kPerThread);
}

cudaError_t cudaMemAdvise(const void* devPtr, size_t count, enum cudaMemoryAdvise advice,
                          struct cudaMemLocation location) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(adviseManaged(devPtr, count, enumBits(advice), enumBits(location.type), location.id));
}

// What the program advised and prefetched, page by page (client/session/managed_hints.h).
cudaError_t cudaMemRangeGetAttribute(void* data, size_t dataSize, enum cudaMemRangeAttribute attribute,
                                     const void* devPtr, size_t count) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(managedRangeAttribute(data, dataSize, enumBits(attribute), devPtr, count));
}

cudaError_t cudaMemRangeGetAttributes(void** data, size_t* dataSizes, enum cudaMemRangeAttribute* attributes,
                                      size_t numAttributes, const void* devPtr, size_t count) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(managedRangeAttributes(data, dataSizes, attributes, numAttributes, devPtr, count));
}

static cudaError_t attachCommon(cudaStream_t stream, void* devPtr, size_t length, unsigned flags,
                                DefaultStream spelling) {
  bindPrimaryContextIfNoneCurrent();
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
    return recordError(cudaErrorInvalidValue);
  // length 0: the whole allocation, which devPtr must then start.
  if (length == 0) {
    const HostAllocations& host = HostAllocations::instance();
    return recordError(host.isManaged(devPtr) && host.isManagedBase(devPtr) ? cudaSuccess
                                                                            : cudaErrorInvalidValue);
  }
  return recordError(managedHint(devPtr, length));
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void* devPtr, size_t length, unsigned int flags) {
  return attachCommon(stream, devPtr, length, flags, DefaultStream::kLegacy);
}
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* devPtr, size_t length,
                                          unsigned int flags) {
  return attachCommon(stream, devPtr, length, flags, DefaultStream::kPerThread);
}

// cudaHostRegister: the pages become memory shared with the worker, mapped for the device
// (client/session/host_allocations.h, page_swap.h). Mapped for the device whatever the flags,
// as all page-locked memory is under unified addressing. I/O memory and read-only
// registration are not offered (hostRegisterSupported devices report neither).
cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  bindPrimaryContextIfNoneCurrent();
  constexpr unsigned kKnown =
      cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
  if ((flags & ~kKnown) != 0 || ptr == nullptr || size == 0) return recordError(cudaErrorInvalidValue);
  if ((flags & (cudaHostRegisterIoMemory | cudaHostRegisterReadOnly)) != 0) {
    if (firstTime("cudaHostRegister io or read-only")) {
      AGILEOS_LOG_WARN(
          "cudaHostRegister with cudaHostRegisterIoMemory or cudaHostRegisterReadOnly is not "
          "supported by AgileOS; returning not-supported");
    }
    return recordError(cudaErrorNotSupported);
  }
  if (cudaError_t error = requireConnection(); error != cudaSuccess) return recordError(error);
  return recordError(HostAllocations::instance().registerRange(ptr, size, flags | cudaHostRegisterMapped));
}

cudaError_t cudaHostUnregister(void* ptr) {
  bindPrimaryContextIfNoneCurrent();
  if (ptr == nullptr) return recordError(cudaErrorInvalidValue);
  return recordError(HostAllocations::instance().unregister(ptr));
}

cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  bindPrimaryContextIfNoneCurrent();
  if (devPtr == nullptr || pitch == nullptr) return recordError(cudaErrorInvalidValue);
  if (width > SIZE_MAX - kPitchAlignment) return recordError(cudaErrorInvalidValue);
  const size_t rounded = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (height != 0 && rounded > SIZE_MAX / height) return recordError(cudaErrorMemoryAllocation);
  *pitch = rounded;
  return cudaMalloc(devPtr, rounded * height);
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t freeBytes = 0, totalBytes = 0;
  const cudaError_t error = deviceMemoryInfo(&freeBytes, &totalBytes);
  if (error == cudaSuccess) {
    *free = freeBytes;
    *total = totalBytes;
  }
  return recordError(error);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  bindPrimaryContextIfNoneCurrent();
  if (pHost == nullptr) return recordError(cudaErrorInvalidValue);
  constexpr unsigned kKnown = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if ((flags & ~kKnown) != 0) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = requireConnection(); error != cudaSuccess) return recordError(error);
  if (size == 0) {
    *pHost = nullptr;
    return cudaSuccess;
  }
  *pHost = nullptr;
  return recordError(HostAllocations::instance().allocate(size, flags, pHost));
}

// The device's address of mapped host memory (client/session/host_allocations.h).
cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (pDevice == nullptr || flags != 0) return recordError(cudaErrorInvalidValue);
  const std::optional<std::uint64_t> address = HostAllocations::instance().deviceAddressOf(pHost);
  if (!address) return recordError(cudaErrorInvalidValue);
  *pDevice = reinterpret_cast<void*>(*address);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  return recordError(HostAllocations::instance().free(ptr));
}

cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  if (pFlags == nullptr) return recordError(cudaErrorInvalidValue);
  std::optional<unsigned> flags = HostAllocations::instance().flagsOf(pHost);
  if (!flags) return recordError(cudaErrorInvalidValue);
  *pFlags = *flags;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return recordError(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  const std::optional<HostAllocations::Kind> hostKind = HostAllocations::instance().kindOf(ptr);
  if (hostKind == HostAllocations::Kind::kManaged) {  // one address for host and device
    attributes->type = cudaMemoryTypeManaged;
    attributes->device = 0;
    attributes->hostPointer = const_cast<void*>(ptr);
    attributes->devicePointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  if (hostKind) {
    attributes->type = cudaMemoryTypeHost;
    attributes->device = 0;
    attributes->hostPointer = const_cast<void*>(ptr);
    // A devicePointer for page-locked memory, mapped for the device at the worker's address (the
    // host address, unless this process used it already), as UVA maps pinned memory natively;
    // none for memory the shared-memory transport could not map (gRPC).
    if (std::optional<std::uint64_t> device = HostAllocations::instance().deviceAddressOf(ptr))
      attributes->devicePointer = reinterpret_cast<void*>(*device);
    return cudaSuccess;
  }
  if (ptr != nullptr && isDeviceAddress(ptr)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = 0;
    attributes->devicePointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  attributes->type = cudaMemoryTypeUnregistered;
  attributes->device = -2;  // what cudart reports for memory it does not know
  attributes->hostPointer = const_cast<void*>(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return memcpyCommon(dst, src, count, kind, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return memcpyCommon(dst, src, count, kind, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return memcpyCommon(dst, src, count, kind, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return memcpyCommon(dst, src, count, kind, stream, DefaultStream::kPerThread, true);
}

cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                 size_t count, struct cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                 size_t numAttrs, cudaStream_t stream) {
  return memcpyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, DefaultStream::kLegacy);
}
cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                      size_t count, struct cudaMemcpyAttributes* attrs, size_t* attrsIdxs,
                                      size_t numAttrs, cudaStream_t stream) {
  return memcpyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, DefaultStream::kPerThread);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return memsetCommon(devPtr, value, count, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return memsetCommon(devPtr, value, count, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memsetCommon(devPtr, value, count, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memsetCommon(devPtr, value, count, stream, DefaultStream::kPerThread, true);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DCommon(dst, dpitch, src, spitch, width, height, kind, nullptr, DefaultStream::kLegacy,
                        false);
}
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DCommon(dst, dpitch, src, spitch, width, height, kind, nullptr, DefaultStream::kPerThread,
                        false);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy2DCommon(dst, dpitch, src, spitch, width, height, kind, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy2DCommon(dst, dpitch, src, spitch, width, height, kind, stream, DefaultStream::kPerThread,
                        true);
}

cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return memset2DCommon(devPtr, pitch, value, width, height, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return memset2DCommon(devPtr, pitch, value, width, height, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  return memset2DCommon(devPtr, pitch, value, width, height, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream) {
  return memset2DCommon(devPtr, pitch, value, width, height, stream, DefaultStream::kPerThread, true);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (devPtr == nullptr) return recordError(cudaErrorInvalidValue);
  DeviceVariable variable;
  if (cudaError_t error = symbolAddress(symbol, &variable); error != cudaSuccess) return recordError(error);
  *devPtr = reinterpret_cast<void*>(variable.dptr);
  return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (size == nullptr) return recordError(cudaErrorInvalidValue);
  DeviceVariable variable;
  if (cudaError_t error = symbolAddress(symbol, &variable); error != cudaSuccess) return recordError(error);
  *size = variable.size;
  return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
  return memcpyToSymbolCommon(symbol, src, count, offset, kind, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind) {
  return memcpyToSymbolCommon(symbol, src, count, offset, kind, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyToSymbolCommon(symbol, src, count, offset, kind, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyToSymbolCommon(symbol, src, count, offset, kind, stream, DefaultStream::kPerThread, true);
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
  return memcpyFromSymbolCommon(dst, symbol, count, offset, kind, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind) {
  return memcpyFromSymbolCommon(dst, symbol, count, offset, kind, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyFromSymbolCommon(dst, symbol, count, offset, kind, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyFromSymbolCommon(dst, symbol, count, offset, kind, stream, DefaultStream::kPerThread, true);
}

}  // extern "C"
