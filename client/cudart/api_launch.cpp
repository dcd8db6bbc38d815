// Kernel launches and kernel queries (cudart exports). The launch itself, and when it may be
// sent without waiting, is client/session/kernel_launch.h's, shared with the driver shim; CUDA 13
// reports bad dimensions (an empty grid included) as cudaErrorInvalidValue, which is what the
// worker returns.
//
// The <<<>>> syntax compiles to __cudaPushCallConfiguration followed by the
// kernel's host stub, which pops the configuration and calls
// cudaLaunchKernel. Parameters are packed at the offsets the worker learned
// from the driver; the client never guesses a layout.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "client/session/context_calls.h"
#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/function_calls.h"
#include "client/session/kernel_launch.h"
#include "client/session/launch_attributes.h"
#include "client/session/module_registry.h"
#include "client/session/streams.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

struct CallConfiguration {
  dim3 grid;
  dim3 block;
  size_t sharedMem;
  cudaStream_t stream;
};
thread_local std::vector<CallConfiguration> tConfigurations;

enum class LaunchKind { kOrdinary, kCooperative };

cudaError_t launch(const void* func, dim3 grid, dim3 block, void** args, size_t sharedMem,
                   cudaStream_t stream, DefaultStream spelling, LaunchKind kind = LaunchKind::kOrdinary) {
  bindPrimaryContextIfNoneCurrent();
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  KernelLayout layout;
  if (cudaError_t error = ModuleRegistry::instance().kernel(func, &layout); error != cudaSuccess) {
    return recordError(error);
  }
  LaunchShape shape{grid, block, sharedMem, stream, spelling, kind == LaunchKind::kCooperative};
  shape.function = func;
  return recordError(launchKernel(layout, shape, args));
}

// cudaLaunchKernelExC: the config's attributes (client/session/launch_attributes.h) travel with
// the launch; the worker admits them (clusters, priority, ...) or refuses the launch.
cudaError_t launchEx(const cudaLaunchConfig_t* config, const void* func, void** args,
                     DefaultStream spelling) {
  bindPrimaryContextIfNoneCurrent();
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (config == nullptr) return recordError(cudaErrorInvalidValue);
  LaunchAttributes attributes;
  if (cudaError_t error = readLaunchAttributes(config->attrs, config->numAttrs, &attributes);
      error != cudaSuccess)
    return recordError(error);
  KernelLayout layout;
  if (cudaError_t error = ModuleRegistry::instance().kernel(func, &layout); error != cudaSuccess) {
    return recordError(error);
  }
  LaunchShape shape{config->gridDim, config->blockDim, config->dynamicSmemBytes,
                    config->stream,  spelling,         attributes.cooperative};
  shape.attributes = attributes.view();
  shape.function = func;
  return recordError(launchKernel(layout, shape, args));
}

cudaError_t resolveKernel(const void* func, KernelLayout* layout) {
  if (func == nullptr) return cudaErrorInvalidDeviceFunction;
  return ModuleRegistry::instance().kernel(func, layout);
}

}  // namespace

extern "C" {

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream) {
  tConfigurations.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  if (tConfigurations.empty()) return cudaErrorMissingConfiguration;
  const CallConfiguration configuration = tConfigurations.back();
  tConfigurations.pop_back();
  *gridDim = configuration.grid;
  *blockDim = configuration.block;
  *sharedMem = configuration.sharedMem;
  *static_cast<cudaStream_t*>(stream) = configuration.stream;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                             cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, DefaultStream::kLegacy);
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, DefaultStream::kPerThread);
}

// Every block resident at once (the worker launches with cuLaunchCooperativeKernel),
// so the kernel may synchronize its whole grid; a grid too large for that is
// cudaErrorCooperativeLaunchTooLarge, from the driver.
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                        size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, DefaultStream::kLegacy,
                LaunchKind::kCooperative);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                             size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, DefaultStream::kPerThread,
                LaunchKind::kCooperative);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launchEx(config, func, args, DefaultStream::kLegacy);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launchEx(config, func, args, DefaultStream::kPerThread);
}

// nvcc 13 compiles <<<>>> into __cudaGetKernel (once per kernel, cached by the
// program) and __cudaLaunchKernel. The kernel handle AgileOS hands out is the
// kernel's registered host stub address, so both launch paths share one lookup.
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFunction) {
  if (kernel == nullptr) return recordError(cudaErrorInvalidValue);
  if (!ModuleRegistry::instance().isRegisteredKernel(hostFunction)) {
    return recordError(cudaErrorInvalidDeviceFunction);
  }
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(hostFunction));
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  return launch(kernel, gridDim, blockDim, args, sharedMem, stream, DefaultStream::kLegacy);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  return launch(kernel, gridDim, blockDim, args, sharedMem, stream, DefaultStream::kPerThread);
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return recordError(cudaErrorInvalidValue);
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  agileos::v1::FuncAttributes in;
  if (cudaError_t error = functionAttributes(layout.token, &in); error != cudaSuccess)
    return recordError(error);
  std::memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = in.shared_size_bytes();
  attr->constSizeBytes = in.const_size_bytes();
  attr->localSizeBytes = in.local_size_bytes();
  attr->maxThreadsPerBlock = in.max_threads_per_block();
  attr->numRegs = in.num_regs();
  attr->ptxVersion = in.ptx_version();
  attr->binaryVersion = in.binary_version();
  attr->cacheModeCA = in.cache_mode_ca();
  attr->maxDynamicSharedSizeBytes = in.max_dynamic_shared_size_bytes();
  attr->preferredShmemCarveout = in.preferred_shmem_carveout();
  attr->clusterDimMustBeSet = in.cluster_dim_must_be_set();
  attr->requiredClusterWidth = in.required_cluster_width();
  attr->requiredClusterHeight = in.required_cluster_height();
  attr->requiredClusterDepth = in.required_cluster_depth();
  attr->clusterSchedulingPolicyPreference = in.cluster_scheduling_policy_preference();
  attr->nonPortableClusterSizeAllowed = in.non_portable_cluster_size_allowed();
  return cudaSuccess;
}

// The device (mangled) name the kernel was registered with; the client knows it
// from __cudaRegisterFunction, so nothing is loaded or asked of the worker.
cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (name == nullptr) return recordError(cudaErrorInvalidValue);
  if (func == nullptr) return recordError(cudaErrorInvalidDeviceFunction);
  const char* registered = ModuleRegistry::instance().kernelName(func);
  // What cudart 13 answers for a pointer that is not a registered kernel (as in launches).
  if (registered == nullptr) return recordError(cudaErrorInvalidResourceHandle);
  *name = registered;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  return recordError(setFunctionAttribute(layout.token, attr, value));
}

cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache cacheConfig) {
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  return recordError(setFunctionCacheConfig(layout.token, cacheConfig));
}

// Fixed four-byte banks (context_calls.h): a valid setting of a kernel the program has does nothing.
cudaError_t cudaFuncSetSharedMemConfig(const void* func, enum cudaSharedMemConfig config) {
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  return recordError(checkSharedMemBankSetting(enumBits(config)));
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                   int blockSize, size_t dynamicSMemSize,
                                                                   unsigned int flags) {
  if (numBlocks == nullptr) return recordError(cudaErrorInvalidValue);
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  return recordError(
      maxActiveBlocksPerMultiprocessor(layout.token, blockSize, dynamicSMemSize, flags, numBlocks));
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                                          size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize,
                                                                cudaOccupancyDefault);
}

// The parameter's place in the launch buffer, from the kernel's layout (the worker's answer when
// the kernel was resolved); paramSize may be null.
cudaError_t cudaFuncGetParamInfo(const void* func, size_t paramIndex, size_t* paramOffset,
                                 size_t* paramSize) {
  if (paramOffset == nullptr) return recordError(cudaErrorInvalidValue);
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  if (paramIndex >= layout.params.size()) return recordError(cudaErrorInvalidValue);
  *paramOffset = layout.params[paramIndex].first;
  if (paramSize != nullptr) *paramSize = layout.params[paramIndex].second;
  return cudaSuccess;
}

cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, const void* func,
                                                      int numBlocks, int blockSize) {
  if (dynamicSmemSize == nullptr || numBlocks <= 0 || blockSize <= 0)
    return recordError(cudaErrorInvalidValue);
  int optIn = 0;
  if (cudaError_t error = cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
      error != cudaSuccess) {
    return error;
  }
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  return recordError(availableDynamicSharedMemory(layout.token, numBlocks, blockSize,
                                                  static_cast<std::uint64_t>(optIn < 0 ? 0 : optIn),
                                                  dynamicSmemSize));
}

// Clusters: the worker asks the driver for the launch the config describes (its attributes read
// as cudaLaunchKernelExC reads them).
static cudaError_t clusterQuery(int* value, const void* func, const cudaLaunchConfig_t* config,
                                bool potentialSize) {
  if (value == nullptr || config == nullptr) return recordError(cudaErrorInvalidValue);
  LaunchAttributes attributes;
  if (cudaError_t error = readLaunchAttributes(config->attrs, config->numAttrs, &attributes);
      error != cudaSuccess)
    return recordError(error);
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  LaunchShape shape{config->gridDim, config->blockDim,       config->dynamicSmemBytes,
                    nullptr,         DefaultStream::kLegacy, attributes.cooperative};
  shape.attributes = attributes.view();
  return recordError(clusterOccupancy(layout.token, shape, potentialSize, value));
}

cudaError_t cudaOccupancyMaxActiveClusters(int* numClusters, const void* func,
                                           const cudaLaunchConfig_t* config) {
  return clusterQuery(numClusters, func, config, false);
}

cudaError_t cudaOccupancyMaxPotentialClusterSize(int* clusterSize, const void* func,
                                                 const cudaLaunchConfig_t* config) {
  return clusterQuery(clusterSize, func, config, true);
}

}  // extern "C"
