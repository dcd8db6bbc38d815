// Device and page-locked host memory, copies and fills (libcuda.so.1 exports): the session's
// memory calls and copy engine (client/session/), the same paths as the runtime shim's, so that
// both APIs see one set of allocations. Every device address is checked by the worker.
//
// The *_ptds and *_ptsz entry points (programs built with CUDA_API_PER_THREAD_DEFAULT_STREAM) put
// their work on the calling thread's default stream, as the runtime's per-thread calls do.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "client/common/log.h"
#include "client/cuda/copy_targets.h"
#include "client/cuda/driver_call.h"
#include "client/session/copy_batches.h"
#include "client/session/copy_engine.h"
#include "client/session/enum_bits.h"
#include "client/session/host_allocations.h"
#include "client/session/managed_hints.h"
#include "client/session/memory_calls.h"
#include "client/session/streams.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

// Pitched allocations are aligned like the runtime's (cudaMallocPitch).
constexpr size_t kPitchAlignment = 512;

void* hostPointer(CUdeviceptr address) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

CUresult copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, CUstream stream,
              DefaultStream spelling, Ordering ordering) {
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
    return result;
  return toDriverResult(copyByKind(dst, src, bytes, kind, target));
}

// cuMemsetD8/16/32: the worker fills bytes. A 16- or 32-bit pattern whose bytes are all equal is
// that byte's fill; any other pattern fails closed (logged once).
bool uniformPattern(std::uint32_t value, unsigned width) {
  const std::uint32_t mask = width == 4 ? 0xFFFFFFFFu : (width == 2 ? 0xFFFFu : 0xFFu);
  return (value & mask) == ((value & 0xFFu) * 0x01010101u & mask);
}

CUresult unsupportedPattern() {
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    AGILEOS_LOG_WARN(
        "cuMemsetD16/D32 with a pattern whose bytes differ is not supported by AgileOS yet; "
        "returning CUDA_ERROR_NOT_SUPPORTED");
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fill(CUdeviceptr dst, std::uint32_t value, unsigned width, size_t count, CUstream stream,
              DefaultStream spelling, Ordering ordering) {
  if (!uniformPattern(value, width)) return unsupportedPattern();
  if (count > SIZE_MAX / width) return CUDA_ERROR_INVALID_VALUE;
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
    return result;
  if (count == 0) return CUDA_SUCCESS;
  return toDriverResult(fillDevice(dst, static_cast<int>(value & 0xFFu), count * width, target));
}

// cuMemsetD2D8/16/32: `height` rows of `width` elements, `pitch` bytes apart; the same patterns
// as fill().
CUresult fill2D(CUdeviceptr dst, size_t pitch, std::uint32_t value, unsigned elementBytes, size_t width,
                size_t height, CUstream stream, DefaultStream spelling, Ordering ordering) {
  if (!uniformPattern(value, elementBytes)) return unsupportedPattern();
  if (width > SIZE_MAX / elementBytes || width * elementBytes > pitch) return CUDA_ERROR_INVALID_VALUE;
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
    return result;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  return toDriverResult(
      fillRows(dst, pitch, static_cast<int>(value & 0xFFu), width * elementBytes, height, target));
}

// cuMemcpy2D and friends: copy_engine's pitched rows, as cudaMemcpy2D. A row's width may not
// exceed either pitch (a single row may have any pitch).
CUresult copy2D(const CUDA_MEMCPY2D* copy, CUstream stream, DefaultStream spelling, Ordering ordering) {
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (memoryTypeOf(copy->srcMemoryType) == CU_MEMORYTYPE_ARRAY ||
      memoryTypeOf(copy->dstMemoryType) == CU_MEMORYTYPE_ARRAY) {
    // One request the worker bounds by the array (client/session/array_copies.h); a single row
    // may have any pitch, as below.
    const std::size_t width = copy->WidthInBytes;
    const std::size_t srcPitch = copy->Height <= 1 ? std::max(copy->srcPitch, width) : copy->srcPitch;
    const std::size_t dstPitch = copy->Height <= 1 ? std::max(copy->dstPitch, width) : copy->dstPitch;
    ArrayCopy arrays;
    if (!arrayCopyEnd(memoryTypeOf(copy->srcMemoryType), copy->srcHost, copy->srcDevice, copy->srcArray,
                      copy->srcXInBytes, copy->srcY, 0, srcPitch, copy->Height, &arrays.src) ||
        !arrayCopyEnd(memoryTypeOf(copy->dstMemoryType), copy->dstHost, copy->dstDevice, copy->dstArray,
                      copy->dstXInBytes, copy->dstY, 0, dstPitch, copy->Height, &arrays.dst)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    arrays.widthBytes = width;
    arrays.height = copy->Height;
    CopyTarget target;
    if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
      return result;
    return toDriverResult(copyWithArray(arrays, target));
  }
  std::uintptr_t src = 0, dst = 0;
  bool srcOnDevice = false, dstOnDevice = false, unified = false;
  if (!rectangleSide(memoryTypeOf(copy->srcMemoryType), copy->srcHost, copy->srcDevice, copy->srcXInBytes,
                     copy->srcY, copy->srcPitch, &src, &srcOnDevice, &unified) ||
      !rectangleSide(memoryTypeOf(copy->dstMemoryType), copy->dstHost, copy->dstDevice, copy->dstXInBytes,
                     copy->dstY, copy->dstPitch, &dst, &dstOnDevice, &unified)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t width = copy->WidthInBytes;
  const size_t srcPitch = copy->Height <= 1 ? std::max(copy->srcPitch, width) : copy->srcPitch;
  const size_t dstPitch = copy->Height <= 1 ? std::max(copy->dstPitch, width) : copy->dstPitch;
  if (width > srcPitch || width > dstPitch) return CUDA_ERROR_INVALID_VALUE;
  const cudaMemcpyKind kind = rectangleCopyKind(srcOnDevice, dstOnDevice, unified);
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
    return result;
  if (width == 0 || copy->Height == 0) return CUDA_SUCCESS;
  return toDriverResult(copyRows(reinterpret_cast<void*>(dst), dstPitch, reinterpret_cast<const void*>(src),
                                 srcPitch, width, copy->Height, kind, target));
}

constexpr DefaultStream kLegacy = DefaultStream::kLegacy;
constexpr DefaultStream kPerThread = DefaultStream::kPerThread;
constexpr Ordering kSync = Ordering::kSynchronous;
constexpr Ordering kAsync = Ordering::kAsynchronous;

// cuMemcpyBatchAsync (and _v2), as the runtime shim's cudaMemcpyBatchAsync: the batch's own
// arguments first (client/session/copy_batches.h; nothing is copied when one is bad, *failIdx is
// SIZE_MAX then), the legacy stream refused, then each copy in order as cuMemcpyAsync. A copy
// refused on its own ends the batch with its error and its index in *failIdx; the copies before it
// were issued. A batch with a source read only during the call synchronizes the stream.
CUresult copyBatch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                   CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                   CUstream stream, DefaultStream spelling) {
  static_assert(sizeof(CUmemcpyAttributes) == sizeof(cudaMemcpyAttributes));
  if (failIdx != nullptr) *failIdx = SIZE_MAX;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  bool duringCall = false;
  if (cudaError_t error =
          checkCopyBatch(dsts, srcs, sizes, count, reinterpret_cast<const cudaMemcpyAttributes*>(attrs),
                         attrsIdxs, numAttrs, &duringCall);
      error != cudaSuccess)
    return toDriverResult(error);
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, Ordering::kAsynchronous, &target);
      result != CUDA_SUCCESS)
    return result;
  if (target.stream == 0) return CUDA_ERROR_INVALID_VALUE;  // the legacy stream is not allowed
  for (size_t i = 0; i < count; ++i) {
    if (sizes[i] == 0) continue;
    if (CUresult result = copy(hostPointer(dsts[i]), hostPointer(srcs[i]), sizes[i], cudaMemcpyDefault,
                               stream, spelling, kAsync);
        result != CUDA_SUCCESS) {
      if (failIdx != nullptr) *failIdx = i;
      return result;
    }
  }
  if (!duringCall) return CUDA_SUCCESS;
  return spelling == kPerThread ? cuStreamSynchronize_ptsz(stream) : cuStreamSynchronize(stream);
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;  // the driver refuses an empty allocation
  std::uint64_t address = 0;
  const CUresult result = toDriverResult(allocateDevice(bytesize, &address));
  *dptr = address;
  return result;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (dptr == 0) return CUDA_SUCCESS;
  const auto* address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(dptr));
  if (HostAllocations::instance().isManaged(address)) {  // managed memory (cuMemAllocManaged)
    return toDriverResult(HostAllocations::instance().freeManaged(const_cast<void*>(address)));
  }
  return toDriverResult(freeDevice(dptr));
}

// Managed memory, as cudaMallocManaged (client/session/host_allocations.h).
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  void* p = nullptr;
  const CUresult result = toDriverResult(HostAllocations::instance().allocateManaged(bytesize, flags, &p));
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return result;
}

// cuMemHostRegister, as cudaHostRegister: the pages become memory shared with the worker and
// mapped for the device there. I/O memory and read-only registration fail closed.
CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                              CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if ((Flags & ~kKnown) != 0 || p == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & (CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)) != 0)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(
      HostAllocations::instance().registerRange(p, bytesize, Flags | CU_MEMHOSTREGISTER_DEVICEMAP));
}
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return cuMemHostRegister_v2(p, bytesize, Flags);
}

static const void* asPointer(CUdeviceptr address) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
}

// Prefetch, advice and stream attachment of managed memory: hints with nothing to move here
// (managed memory never moves), as in the runtime shim; the range must be managed memory of this
// session. Advice and prefetch targets are recorded for the range queries
// (client/session/managed_hints.h, shared with the runtime shim).
static CUresult managedHint(CUdeviceptr devPtr, size_t count) {
  return count != 0 && HostAllocations::instance().isManaged(asPointer(devPtr), count)
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

static CUresult prefetch(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned flags,
                         CUstream stream, DefaultStream spelling) {
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, Ordering::kAsynchronous, &target);
      result != CUDA_SUCCESS)
    return result;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return toDriverResult(prefetchManaged(asPointer(devPtr), count, enumBits(location.type), location.id));
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                               CUstream hStream) {
  return prefetch(devPtr, count, location, flags, hStream, kLegacy);
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                    unsigned int flags, CUstream hStream) {
  return prefetch(devPtr, count, location, flags, hStream, kPerThread);
}

// The ABI before CUDA 13: a device ordinal (CU_DEVICE_CPU for the host) instead of a location.
static CUmemLocation locationOf(CUdevice device) {
  CUmemLocation location{};
  location.type = device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device == CU_DEVICE_CPU ? 0 : device;
  return location;
}
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return prefetch(devPtr, count, locationOf(dstDevice), 0, hStream, kLegacy);
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return prefetch(devPtr, count, locationOf(dstDevice), 0, hStream, kPerThread);
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
  return inContext([&] {
    return adviseManaged(asPointer(devPtr), count, enumBits(advice), enumBits(location.type), location.id);
  });
}

// What the program advised and prefetched, page by page (client/session/managed_hints.h).
CUresult cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                                CUdeviceptr devPtr, size_t count) {
  return inContext(
      [&] { return managedRangeAttribute(data, dataSize, enumBits(attribute), asPointer(devPtr), count); });
}

CUresult cuMemRangeGetAttributes(void** data, size_t* dataSizes, CUmem_range_attribute* attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count) {
  return inContext([&] {
    return managedRangeAttributes(data, dataSizes, attributes, numAttributes, asPointer(devPtr), count);
  });
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  return cuMemAdvise_v2(devPtr, count, advice, locationOf(device));
}

static CUresult attach(CUstream stream, CUdeviceptr dptr, size_t length, unsigned flags,
                       DefaultStream spelling) {
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, Ordering::kAsynchronous, &target);
      result != CUDA_SUCCESS)
    return result;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  if (length == 0) {  // the whole allocation, which dptr must start
    return HostAllocations::instance().isManagedBase(
               reinterpret_cast<const void*>(static_cast<std::uintptr_t>(dptr)))
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_VALUE;
  }
  return managedHint(dptr, length);
}

CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) {
  return attach(hStream, dptr, length, flags, kLegacy);
}
CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) {
  return attach(hStream, dptr, length, flags, kPerThread);
}

CUresult cuMemHostUnregister(void* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(HostAllocations::instance().unregister(p));
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t freeBytes = 0, totalBytes = 0;
  const CUresult result = toDriverResult(deviceMemoryInfo(&freeBytes, &totalBytes));
  if (result == CUDA_SUCCESS) {
    *free = freeBytes;
    *total = totalBytes;
  }
  return result;
}

// Device-mapped host memory (CU_MEMHOSTALLOC_DEVICEMAP, cuDNN asks for it in cudnnCreate) is a
// segment shared with the worker and mapped for the device there (client/session/
// host_allocations.h); over gRPC it is not offered, and the device reports CAN_MAP_HOST_MEMORY = 0
// there, so programs that ask first keep their fallback.
CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kKnown =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  static_assert(CU_MEMHOSTALLOC_DEVICEMAP == cudaHostAllocMapped);
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  *pp = nullptr;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  return toDriverResult(HostAllocations::instance().allocate(bytesize, flags, pp));
}

// The device's address of mapped host memory (flags must be 0, as the driver requires).
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int flags) {
  if (pdptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const std::optional<std::uint64_t> address = HostAllocations::instance().deviceAddressOf(p);
  if (!address) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = *address;
  return CUDA_SUCCESS;
}

// The flags page-locked or registered memory was made with (as cudaHostGetFlags).
CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const std::optional<unsigned> flags = HostAllocations::instance().flagsOf(p);
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = *flags;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }

CUresult cuMemFreeHost(void* p) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(HostAllocations::instance().free(p));
}

// --- copies ---

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy(hostPointer(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, nullptr, kLegacy, kSync);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy(hostPointer(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, nullptr, kPerThread, kSync);
}
CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(dstHost, hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToHost, nullptr, kLegacy, kSync);
}
CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(dstHost, hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToHost, nullptr, kPerThread, kSync);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(hostPointer(dstDevice), hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, nullptr,
              kLegacy, kSync);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(hostPointer(dstDevice), hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, nullptr,
              kPerThread, kSync);
}
// Unified addressing: the direction follows from the addresses.
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(hostPointer(dst), hostPointer(src), ByteCount, cudaMemcpyDefault, nullptr, kLegacy, kSync);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(hostPointer(dst), hostPointer(src), ByteCount, cudaMemcpyDefault, nullptr, kPerThread, kSync);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  return copy(hostPointer(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, hStream, kLegacy, kAsync);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  return copy(hostPointer(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, hStream, kPerThread,
              kAsync);
}
CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return copy(dstHost, hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToHost, hStream, kLegacy, kAsync);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return copy(dstHost, hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToHost, hStream, kPerThread,
              kAsync);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return copy(hostPointer(dstDevice), hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, hStream,
              kLegacy, kAsync);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  return copy(hostPointer(dstDevice), hostPointer(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, hStream,
              kPerThread, kAsync);
}
CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                            CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                            CUstream hStream) {
  return copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, kLegacy);
}
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                 CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                 size_t* failIdx, CUstream hStream) {
  return copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, kPerThread);
}
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                               CUstream hStream) {
  return copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, kLegacy);
}
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                    CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                    CUstream hStream) {
  return copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, kPerThread);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return copy(hostPointer(dst), hostPointer(src), ByteCount, cudaMemcpyDefault, hStream, kLegacy, kAsync);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return copy(hostPointer(dst), hostPointer(src), ByteCount, cudaMemcpyDefault, hStream, kPerThread, kAsync);
}

// --- fills ---

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fill(dstDevice, uc, 1, N, nullptr, kLegacy, kSync);
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fill(dstDevice, uc, 1, N, nullptr, kPerThread, kSync);
}
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return fill(dstDevice, us, 2, N, nullptr, kLegacy, kSync);
}
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return fill(dstDevice, us, 2, N, nullptr, kPerThread, kSync);
}
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return fill(dstDevice, ui, 4, N, nullptr, kLegacy, kSync);
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return fill(dstDevice, ui, 4, N, nullptr, kPerThread, kSync);
}
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return fill(dstDevice, uc, 1, N, hStream, kLegacy, kAsync);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return fill(dstDevice, uc, 1, N, hStream, kPerThread, kAsync);
}
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return fill(dstDevice, us, 2, N, hStream, kLegacy, kAsync);
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return fill(dstDevice, us, 2, N, hStream, kPerThread, kAsync);
}
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return fill(dstDevice, ui, 4, N, hStream, kLegacy, kAsync);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return fill(dstDevice, ui, 4, N, hStream, kPerThread, kAsync);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return CUDA_ERROR_INVALID_VALUE;
  if (WidthInBytes == 0 || Height == 0 || WidthInBytes > SIZE_MAX - kPitchAlignment)
    return CUDA_ERROR_INVALID_VALUE;
  const size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (pitch > SIZE_MAX / Height) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult result = cuMemAlloc_v2(dptr, pitch * Height); result != CUDA_SUCCESS) return result;
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) { return copy2D(pCopy, nullptr, kLegacy, kSync); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) { return copy2D(pCopy, nullptr, kPerThread, kSync); }
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) { return copy2D(pCopy, nullptr, kLegacy, kSync); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  return copy2D(pCopy, nullptr, kPerThread, kSync);
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return copy2D(pCopy, hStream, kLegacy, kAsync);
}
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return copy2D(pCopy, hStream, kPerThread, kAsync);
}

CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                         size_t Height) {
  return fill2D(dstDevice, dstPitch, uc, 1, Width, Height, nullptr, kLegacy, kSync);
}
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                              size_t Height) {
  return fill2D(dstDevice, dstPitch, uc, 1, Width, Height, nullptr, kPerThread, kSync);
}
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                          size_t Height) {
  return fill2D(dstDevice, dstPitch, us, 2, Width, Height, nullptr, kLegacy, kSync);
}
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                               size_t Height) {
  return fill2D(dstDevice, dstPitch, us, 2, Width, Height, nullptr, kPerThread, kSync);
}
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                          size_t Height) {
  return fill2D(dstDevice, dstPitch, ui, 4, Width, Height, nullptr, kLegacy, kSync);
}
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                               size_t Height) {
  return fill2D(dstDevice, dstPitch, ui, 4, Width, Height, nullptr, kPerThread, kSync);
}
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                           size_t Height, CUstream hStream) {
  return fill2D(dstDevice, dstPitch, uc, 1, Width, Height, hStream, kLegacy, kAsync);
}
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                size_t Height, CUstream hStream) {
  return fill2D(dstDevice, dstPitch, uc, 1, Width, Height, hStream, kPerThread, kAsync);
}
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height, CUstream hStream) {
  return fill2D(dstDevice, dstPitch, us, 2, Width, Height, hStream, kLegacy, kAsync);
}
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                 size_t Height, CUstream hStream) {
  return fill2D(dstDevice, dstPitch, us, 2, Width, Height, hStream, kPerThread, kAsync);
}
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                            size_t Height, CUstream hStream) {
  return fill2D(dstDevice, dstPitch, ui, 4, Width, Height, hStream, kLegacy, kAsync);
}
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                 size_t Height, CUstream hStream) {
  return fill2D(dstDevice, dstPitch, ui, 4, Width, Height, hStream, kPerThread, kAsync);
}

}  // extern "C"
