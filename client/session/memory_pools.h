// Stream-ordered allocation and memory pools, shared by the runtime and the driver shims
// (untrusted side): cudaMallocAsync/cuMemAllocAsync, cudaFreeAsync/cuMemFreeAsync and the pool
// calls. The worker owns the memory and the order of frees (proto StreamOrderedMemory); this side
// keeps what is the program's own business: the pool handles it holds, each pool's attributes
// (release threshold, reuse policy) and each device's current pool. Each returns the call's error
// without recording it.
//
// A pool handle is the address of a record this file owns; a handle is looked up before it is
// used, never dereferenced as given. Thread-safety: every function is safe to call concurrently.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "client/session/streams.h"

namespace agileos::client {

// The pool cudaMallocAsync draws from on `device` (cudaDeviceGetMemPool), the default pool
// (cudaDeviceGetDefaultMemPool), and cudaDeviceSetMemPool.
cudaError_t currentMemoryPool(int device, cudaMemPool_t* pool);
cudaError_t defaultMemoryPool(int device, cudaMemPool_t* pool);
cudaError_t setCurrentMemoryPool(int device, cudaMemPool_t pool);

cudaError_t createMemoryPool(const cudaMemPoolProps* props, cudaMemPool_t* pool);
cudaError_t destroyMemoryPool(cudaMemPool_t pool);
// `value` points to an int (the reuse flags) or a cuuint64_t (the byte counts), by attribute.
cudaError_t memoryPoolAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value);
cudaError_t setMemoryPoolAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, const void* value);
cudaError_t trimMemoryPool(cudaMemPool_t pool, size_t minBytesToKeep);
cudaError_t setMemoryPoolAccess(cudaMemPool_t pool, const cudaMemAccessDesc* descs, size_t count);
cudaError_t memoryPoolAccess(cudaMemAccessFlags* flags, cudaMemPool_t pool, const cudaMemLocation* location);

// cudaMallocAsync (pool null: the device's current pool) and cudaMallocFromPoolAsync.
cudaError_t allocateAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream,
                          DefaultStream spelling);
cudaError_t freeAsync(void* ptr, cudaStream_t stream, DefaultStream spelling);

// After cudaDeviceReset: explicit pools are gone and every device uses its default pool again.
void forgetAllMemoryPools();

}  // namespace agileos::client
