// Stream-ordered allocation and memory pools (libcuda.so.1 exports): the same session calls as
// the runtime shim's (client/session/memory_pools.h), so a program that mixes cudaMallocAsync
// and cuMemFreeAsync, or a CUDA runtime linked into the program, sees one set of pools.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "client/cuda/driver_call.h"
#include "client/session/memory_pools.h"
#include "client/session/streams.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

// The driver's pool types are the runtime's under other names: same layout and numbering.
static_assert(std::is_same_v<CUmemoryPool, cudaMemPool_t>);
static_assert(sizeof(CUmemPoolProps) == sizeof(cudaMemPoolProps));
static_assert(offsetof(CUmemPoolProps, location) == offsetof(cudaMemPoolProps, location));
static_assert(offsetof(CUmemPoolProps, maxSize) == offsetof(cudaMemPoolProps, maxSize));
static_assert(sizeof(CUmemAccessDesc) == sizeof(cudaMemAccessDesc));
static_assert(sizeof(CUmemLocation) == sizeof(cudaMemLocation));
static_assert(int(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == int(cudaMemPoolAttrReleaseThreshold));
static_assert(int(CU_MEMPOOL_ATTR_USED_MEM_HIGH) == int(cudaMemPoolAttrUsedMemHigh));
static_assert(int(CU_MEM_LOCATION_TYPE_DEVICE) == int(cudaMemLocationTypeDevice));
static_assert(int(CU_MEM_ALLOCATION_TYPE_PINNED) == int(cudaMemAllocationTypePinned));
static_assert(int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE) == int(cudaMemAccessFlagsProtReadWrite));

namespace {

cudaStream_t runtimeStream(CUstream stream) { return reinterpret_cast<cudaStream_t>(stream); }

CUresult allocate(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream,
                  DefaultStream spelling) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] {
    void* address = nullptr;
    const cudaError_t error = allocateAsync(&address, bytesize, pool, runtimeStream(stream), spelling);
    *dptr = reinterpret_cast<CUdeviceptr>(address);
    return error;
  });
}

CUresult deviceOfLocation(const CUmemLocation* location, CUmemAllocationType type, int* device) {
  if (location == nullptr || type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  *device = location->id;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return allocate(dptr, bytesize, nullptr, hStream, DefaultStream::kLegacy);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return allocate(dptr, bytesize, nullptr, hStream, DefaultStream::kPerThread);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocate(dptr, bytesize, pool, hStream, DefaultStream::kLegacy);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocate(dptr, bytesize, pool, hStream, DefaultStream::kPerThread);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return inContext([&] {
    return freeAsync(reinterpret_cast<void*>(dptr), runtimeStream(hStream), DefaultStream::kLegacy);
  });
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return inContext([&] {
    return freeAsync(reinterpret_cast<void*>(dptr), runtimeStream(hStream), DefaultStream::kPerThread);
  });
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  return toDriverResult(defaultMemoryPool(dev, pool_out));
}
CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  return toDriverResult(currentMemoryPool(dev, pool));
}
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  return toDriverResult(setCurrentMemoryPool(dev, pool));
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location, CUmemAllocationType type) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  int device = 0;
  if (CUresult result = deviceOfLocation(location, type, &device); result != CUDA_SUCCESS) return result;
  return toDriverResult(defaultMemoryPool(device, pool_out));
}
CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  int device = 0;
  if (CUresult result = deviceOfLocation(location, type, &device); result != CUDA_SUCCESS) return result;
  return toDriverResult(currentMemoryPool(device, pool));
}
CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  int device = 0;
  if (CUresult result = deviceOfLocation(location, type, &device); result != CUDA_SUCCESS) return result;
  return toDriverResult(setCurrentMemoryPool(device, pool));
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  return inContext(
      [&] { return createMemoryPool(reinterpret_cast<const cudaMemPoolProps*>(poolProps), pool); });
}
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return inContext([&] { return destroyMemoryPool(pool); });
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return inContext([&] { return setMemoryPoolAttribute(pool, static_cast<cudaMemPoolAttr>(attr), value); });
}
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return inContext([&] { return memoryPoolAttribute(pool, static_cast<cudaMemPoolAttr>(attr), value); });
}
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  return inContext([&] { return trimMemoryPool(pool, minBytesToKeep); });
}
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  return inContext(
      [&] { return setMemoryPoolAccess(pool, reinterpret_cast<const cudaMemAccessDesc*>(map), count); });
}
CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  return inContext([&] {
    return memoryPoolAccess(reinterpret_cast<cudaMemAccessFlags*>(flags), memPool,
                            reinterpret_cast<const cudaMemLocation*>(location));
  });
}

}  // extern "C"
