// Stream-ordered allocation and memory pools (cudart exports): the session's memory pools
// (client/session/memory_pools.h), shared with the driver shim. The worker allocates from the
// client's user range and gives a free back only once the work queued before it has finished.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/memory_pools.h"
#include "client/session/streams.h"
#include "client/session/thread_contexts.h"
#include "cudart_api.gen.h"  // checks the _ptsz definitions

using namespace agileos::client;

namespace {

// The device of a memory location; only device locations have pools here (host and NUMA pools
// would be host memory the device reads, which AgileOS does not map).
cudaError_t deviceOfLocation(const cudaMemLocation* location, cudaMemAllocationType type, int* device) {
  if (location == nullptr) return cudaErrorInvalidValue;
  if (type != cudaMemAllocationTypePinned) return cudaErrorInvalidValue;
  if (location->type != cudaMemLocationTypeDevice) return cudaErrorNotSupported;
  *device = location->id;
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(allocateAsync(devPtr, size, nullptr, hStream, DefaultStream::kLegacy));
}
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(allocateAsync(devPtr, size, nullptr, hStream, DefaultStream::kPerThread));
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  bindPrimaryContextIfNoneCurrent();
  if (memPool == nullptr) return recordError(cudaErrorInvalidValue);
  return recordError(allocateAsync(ptr, size, memPool, stream, DefaultStream::kLegacy));
}
cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream) {
  bindPrimaryContextIfNoneCurrent();
  if (memPool == nullptr) return recordError(cudaErrorInvalidValue);
  return recordError(allocateAsync(ptr, size, memPool, stream, DefaultStream::kPerThread));
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(freeAsync(devPtr, hStream, DefaultStream::kLegacy));
}
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(freeAsync(devPtr, hStream, DefaultStream::kPerThread));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  return recordError(defaultMemoryPool(device, memPool));
}
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  return recordError(currentMemoryPool(device, memPool));
}
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  return recordError(setCurrentMemoryPool(device, memPool));
}

cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t* memPool, cudaMemLocation* location,
                                     cudaMemAllocationType type) {
  int device = 0;
  if (cudaError_t error = deviceOfLocation(location, type, &device); error != cudaSuccess)
    return recordError(error);
  return recordError(defaultMemoryPool(device, memPool));
}
cudaError_t cudaMemGetMemPool(cudaMemPool_t* memPool, cudaMemLocation* location, cudaMemAllocationType type) {
  int device = 0;
  if (cudaError_t error = deviceOfLocation(location, type, &device); error != cudaSuccess)
    return recordError(error);
  return recordError(currentMemoryPool(device, memPool));
}
cudaError_t cudaMemSetMemPool(cudaMemLocation* location, cudaMemAllocationType type, cudaMemPool_t memPool) {
  int device = 0;
  if (cudaError_t error = deviceOfLocation(location, type, &device); error != cudaSuccess)
    return recordError(error);
  return recordError(setCurrentMemoryPool(device, memPool));
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
  return recordError(createMemoryPool(poolProps, memPool));
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) { return recordError(destroyMemoryPool(memPool)); }

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  return recordError(setMemoryPoolAttribute(memPool, attr, value));
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  return recordError(memoryPoolAttribute(memPool, attr, value));
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  return recordError(trimMemoryPool(memPool, minBytesToKeep));
}
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc* descList, size_t count) {
  return recordError(setMemoryPoolAccess(memPool, descList, count));
}
cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t memPool,
                                 cudaMemLocation* location) {
  return recordError(memoryPoolAccess(flags, memPool, location));
}

}  // extern "C"
