// Queries and settings of a loaded kernel, shared by the runtime shim (cudaFuncGetAttributes and
// friends, on a host stub or cudaKernel_t) and the driver shim (cuFuncGetAttribute and friends, on
// a CUfunction), both of which resolve their handle to the worker's function token first.
// cudaFuncAttribute and CUfunction_attribute number the settable attributes alike, as do
// cudaFuncCache and CUfunc_cache; the worker checks every value. Each returns the call's error
// without recording it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "agileos/v1/client_api.pb.h"
#include "client/session/kernel_launch.h"

namespace agileos::client {

// Answered from the client's copy of the worker's last answer when it has one (function_calls.cpp).
cudaError_t functionAttributes(std::uint64_t function, v1::FuncAttributes* attributes);
// Drops every remembered answer: a module was unloaded, or the device reset.
void forgetFunctionAttributes();
// The dynamic shared memory a launch of `function` may ask for (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_
// SHARED_SIZE_BYTES, which the program raises to opt in to more than the default), from the
// remembered answer only (no call); false when there is none.
bool rememberedDynamicSharedLimit(std::uint64_t function, std::uint64_t* bytes);
cudaError_t setFunctionAttribute(std::uint64_t function, int attribute, int value);
cudaError_t setFunctionCacheConfig(std::uint64_t function, int config);
cudaError_t maxActiveBlocksPerMultiprocessor(std::uint64_t function, int blockSize,
                                             std::uint64_t dynamicSharedBytes, unsigned flags, int* blocks);
// cuOccupancyAvailableDynamicSMemPerBlock: the most dynamic shared memory a block may take while
// `numBlocks` blocks of `blockSize` threads still fit on one multiprocessor, at most `optInLimit`
// (the device's opt-in maximum per block); 0 when even none fits that many blocks.
cudaError_t availableDynamicSharedMemory(std::uint64_t function, int numBlocks, int blockSize,
                                         std::uint64_t optInLimit, std::size_t* bytes);
// cuOccupancyMaxActiveClusters (potentialSize false) or cuOccupancyMaxPotentialClusterSize for a
// launch of this shape (its stream and cooperative flag are not part of the question).
cudaError_t clusterOccupancy(std::uint64_t function, const LaunchShape& shape, bool potentialSize,
                             int* value);

}  // namespace agileos::client
