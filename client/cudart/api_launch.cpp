// Kernel launches and kernel queries (cudart exports).
//
// Launch dimensions and shared-memory sizes are not judged here: the driver
// refuses bad ones, and CUDA 13 reports that as cudaErrorInvalidValue (an empty
// grid included), which is what the worker returns. What the client does decide
// is whether it must wait for that answer: a launch the driver will surely accept
// (dimensions within the device's and the kernel's limits, default shared memory,
// a stream it created) goes out without waiting for its reply, like a native
// launch, and any error it still causes is reported at the next synchronizing
// call. Every other launch waits, so its error is returned by the launch itself.
//
// The <<<>>> syntax compiles to __cudaPushCallConfiguration followed by the
// kernel's host stub, which pops the configuration and calls
// cudaLaunchKernel. Parameters are packed at the offsets the worker learned
// from the driver; the client never guesses a layout.
#include <cuda_runtime_api.h>
#include <google/protobuf/arena.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "client/cudart/error_state.h"
#include "client/cudart/module_registry.h"
#include "client/cudart/runtime.h"
#include "client/cudart/streams.h"
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

// The device's launch limits, from the cached device description.
struct DeviceLimits {
  bool known = false;
  unsigned maxThreadsPerBlock = 0;
  unsigned maxBlock[3] = {};
  unsigned maxGrid[3] = {};
  unsigned sharedPerBlock = 0;  // without opting in to more
};

const DeviceLimits& deviceLimits() {
  static const DeviceLimits limits = [] {
    DeviceLimits out;
    cudaError_t error = cudaSuccess;
    const agileos::v1::DeviceInfo* info = deviceInfo(&error);
    if (info == nullptr) return out;
    int found = 0;
    for (const agileos::v1::DeviceAttribute& attribute : info->attributes()) {
      const auto value = static_cast<unsigned>(std::max(attribute.value(), 0));
      switch (attribute.attribute()) {
        case cudaDevAttrMaxThreadsPerBlock:
          out.maxThreadsPerBlock = value;
          ++found;
          break;
        case cudaDevAttrMaxBlockDimX:
          out.maxBlock[0] = value;
          ++found;
          break;
        case cudaDevAttrMaxBlockDimY:
          out.maxBlock[1] = value;
          ++found;
          break;
        case cudaDevAttrMaxBlockDimZ:
          out.maxBlock[2] = value;
          ++found;
          break;
        case cudaDevAttrMaxGridDimX:
          out.maxGrid[0] = value;
          ++found;
          break;
        case cudaDevAttrMaxGridDimY:
          out.maxGrid[1] = value;
          ++found;
          break;
        case cudaDevAttrMaxGridDimZ:
          out.maxGrid[2] = value;
          ++found;
          break;
        case cudaDevAttrMaxSharedMemoryPerBlock:
          out.sharedPerBlock = value;
          ++found;
          break;
        default:
          break;
      }
    }
    out.known = found == 8;
    return out;
  }();
  return limits;
}

bool within(const dim3& d, const unsigned (&limit)[3]) {
  return d.x >= 1 && d.y >= 1 && d.z >= 1 && d.x <= limit[0] && d.y <= limit[1] && d.z <= limit[2];
}

// True if the driver will surely accept this launch, so it need not wait for the reply.
bool surelyAccepted(const KernelLayout& layout, dim3 grid, dim3 block, size_t sharedMem,
                    std::uint64_t stream) {
  const DeviceLimits& limits = deviceLimits();
  if (!limits.known || layout.maxThreadsPerBlock <= 0) return false;
  if (!within(grid, limits.maxGrid) || !within(block, limits.maxBlock)) return false;
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (threads > limits.maxThreadsPerBlock ||
      threads > static_cast<std::uint64_t>(layout.maxThreadsPerBlock)) {
    return false;
  }
  if (sharedMem + layout.staticSharedBytes > limits.sharedPerBlock) return false;
  return isKnownStream(stream);
}

cudaError_t launch(const void* func, dim3 grid, dim3 block, void** args, size_t sharedMem,
                   cudaStream_t stream, DefaultStream spelling, LaunchKind kind = LaunchKind::kOrdinary) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  KernelLayout layout;
  if (cudaError_t error = ModuleRegistry::instance().kernel(func, &layout); error != cudaSuccess) {
    return recordError(error);
  }
  if (sharedMem > UINT32_MAX) return recordError(cudaErrorInvalidValue);
  if (!layout.params.empty() && args == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t streamToken = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &streamToken); error != cudaSuccess) {
    return recordError(error);
  }

  // The request lives in an arena on the stack: a launch, the hottest call, allocates
  // nothing for its message (larger parameter blocks spill to the heap as usual).
  alignas(std::max_align_t) char arenaBlock[2048];
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.initial_block = arenaBlock;
  arenaOptions.initial_block_size = sizeof arenaBlock;
  google::protobuf::Arena arena(arenaOptions);
  agileos::v1::CallRequest& request =
      *google::protobuf::Arena::CreateMessage<agileos::v1::CallRequest>(&arena);
  agileos::v1::LaunchKernel* launch = request.mutable_launch_kernel();
  launch->set_function(layout.token);
  launch->mutable_grid()->set_x(grid.x);
  launch->mutable_grid()->set_y(grid.y);
  launch->mutable_grid()->set_z(grid.z);
  launch->mutable_block()->set_x(block.x);
  launch->mutable_block()->set_y(block.y);
  launch->mutable_block()->set_z(block.z);
  launch->set_shared_mem_bytes(static_cast<std::uint32_t>(sharedMem));
  launch->set_stream(streamToken);
  launch->set_cooperative(kind == LaunchKind::kCooperative);
  std::string* params = launch->mutable_params();
  params->assign(layout.bufferSize, '\0');
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    const auto [offset, size] = layout.params[i];
    std::memcpy(params->data() + offset, args[i], size);
  }
  noteWorkPosted(streamToken);
  if (kind == LaunchKind::kOrdinary && surelyAccepted(layout, grid, block, sharedMem, streamToken)) {
    return recordError(invokeAsync(request));
  }
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
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
  agileos::v1::CallRequest request;
  request.mutable_func_get_attributes()->set_function(layout.token);
  agileos::v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return recordError(error);
  const agileos::v1::FuncAttributes& in = reply.func_attributes();
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
  agileos::v1::CallRequest request;
  auto* set = request.mutable_func_set_attribute();
  set->set_function(layout.token);
  set->set_attribute(attr);
  set->set_value(value);
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
}

cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache cacheConfig) {
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  agileos::v1::CallRequest request;
  request.mutable_func_set_cache_config()->set_function(layout.token);
  request.mutable_func_set_cache_config()->set_config(cacheConfig);
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                   int blockSize, size_t dynamicSMemSize,
                                                                   unsigned int flags) {
  if (numBlocks == nullptr) return recordError(cudaErrorInvalidValue);
  KernelLayout layout;
  if (cudaError_t error = resolveKernel(func, &layout); error != cudaSuccess) return recordError(error);
  agileos::v1::CallRequest request;
  auto* query = request.mutable_occupancy_max_active_blocks();
  query->set_function(layout.token);
  query->set_block_size(blockSize);
  query->set_dynamic_smem_bytes(dynamicSMemSize);
  query->set_flags(flags);
  agileos::v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *numBlocks = reply.block_count().num_blocks();
  return recordError(error);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                                          size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize,
                                                                cudaOccupancyDefault);
}

}  // extern "C"
