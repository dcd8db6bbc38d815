// Device-wide calls: device description, synchronization, reset, limits, cache configuration.
#include <spdlog/spdlog.h>

#include "worker/dispatcher.h"
#include "worker/handlers/array_texture_handlers.h"
#include "worker/handlers/context_limits.h"
#include "worker/protected_modules/module_set.h"
#include "worker/session_teardown.h"

namespace agileos::worker {
namespace {

// The device a client sees is virtual: capabilities AgileOS does not offer to
// clients are reported as absent, so programs that check before use take their
// fallback path instead of failing later.
//
// Mapped host memory, cudaHostRegister and managed memory are host segments shared with the
// worker (worker/handlers/host_memory_handlers.cpp), so they exist over the shared-memory
// transport only (`sharesHostMemory`). Managed memory is host memory the device reaches over the
// bus, without migration and without the device's page faults: concurrentManagedAccess and
// pageable access stay 0, which tells programs to synchronize before the host touches it.
// Registered memory is mapped for the device at the worker's address, not the client's
// (canUseHostPointerForRegisteredMem = 0: cudaHostGetDevicePointer gives the device's).
int virtualAttributeValue(int attribute, int value, bool sharesHostMemory) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:      // mapped host memory
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:           // managed memory
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:  // cudaHostRegister
      return sharesHostMemory && value != 0 ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:  // pool handles would cross the client boundary
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:             // IPC crosses the client boundary
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:  // cuMemCreate refuses the flag
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:             // shareable handles are refused
    case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED:              // sparse arrays are not admitted
      return 0;
    default:
      return value;
  }
}

void getDeviceInfo(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  const DeviceDescription& device = ctx.gpu.device();
  v1::DeviceInfo* info = reply.mutable_device_info();
  info->set_device_count(1);  // a worker serves exactly one GPU to its clients
  info->set_name(device.name);
  info->set_uuid(device.uuid);
  info->set_total_global_mem(device.totalGlobalMem);
  info->set_driver_version(device.driverVersion);
  info->set_user_range_begin(memmgr::kUserRange.begin);
  info->set_user_range_end(memmgr::kUserRange.end());
  int least = 0, greatest = 0;
  if (ctx.gpu.streamPriorityRange(&least, &greatest) == CUDA_SUCCESS) {
    info->set_least_stream_priority(least);
    info->set_greatest_stream_priority(greatest);
  }
  for (const auto& [attribute, value] : device.attributes) {
    v1::DeviceAttribute* entry = info->add_attributes();
    entry->set_attribute(attribute);
    entry->set_value(virtualAttributeValue(attribute, value, ctx.shared != nullptr));
  }
}

void deviceSynchronize(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize");
}

// cudaDeviceReset: the client's memory, streams and events are released; its
// registered modules stay loaded (cudart re-registers them transparently after a
// reset), and their globals stay addressable.
void deviceReset(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
  // Modules' DMA registrations end before the memory they name does (as in cudaFree).
  if (ctx.session.protectedModules) ctx.session.protectedModules->revokeAllDma();
  // A reset destroys the client's arrays and texture and surface objects, as natively.
  releaseArraysAndObjects(ctx.gpu, ctx.memory, ctx.session);
  releaseStreamsAndEvents(ctx.gpu, ctx.session);
  // A reset context has its default limits, where the driver lets them go (restoreContextLimits).
  restoreContextLimits(ctx.gpu, ctx.memory, ctx.session);
  releaseUserMemory(ctx.memory, ctx.session);
}

// The limits a client may read and set: cudaLimit and CUlimit share numbering.
bool isClientLimit(int limit) {
  switch (limit) {
    case CU_LIMIT_STACK_SIZE:
    case CU_LIMIT_PRINTF_FIFO_SIZE:
    case CU_LIMIT_MALLOC_HEAP_SIZE:
    case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
    case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
      return true;
    default:
      return false;
  }
}

// Limits a client may read but not set: what the context was made with (its shared memory and
// whether it is a CUDA-in-graphics context). cuBLASLt reads CU_LIMIT_CIG_ENABLED before a GEMM
// and gives up when the read fails.
bool isReadOnlyLimit(int limit) {
  return limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED ||
         limit == CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED;
}

void deviceGetLimit(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const int limit = request.device_get_limit().limit();
  if (!isClientLimit(limit) && !isReadOnlyLimit(limit)) {
    refuse(reply, cudaErrorInvalidValue, "unknown limit");
    return;
  }
  std::size_t value = 0;
  if (!succeeded(ctx, ctx.gpu.getLimit(static_cast<CUlimit>(limit), &value), reply, "cuCtxGetLimit")) return;
  reply.mutable_limit_value()->set_value(value);
}

// The device memory a raised limit sets aside is charged to the client's quota before the driver
// sees the call (context_limits.h); a limit whose cost does not fit is refused with
// cudaErrorMemoryAllocation and changes nothing.
void deviceSetLimit(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.device_set_limit();
  if (isReadOnlyLimit(args.limit())) {
    refuse(reply, cudaErrorUnsupportedLimit, "this limit is fixed when the context is made");
    return;
  }
  if (!isClientLimit(args.limit())) {
    refuse(reply, cudaErrorInvalidValue, "unknown limit");
    return;
  }
  setLimitCharged(ctx, static_cast<CUlimit>(args.limit()), args.value(), reply);
}

// cudaFuncCache and CUfunc_cache share numbering: PREFER_NONE (0) to PREFER_EQUAL (3).
bool isCacheConfig(int config) {
  return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL;
}

void deviceGetCacheConfig(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  CUfunc_cache config = CU_FUNC_CACHE_PREFER_NONE;
  if (!succeeded(ctx, ctx.gpu.getCacheConfig(&config), reply, "cuCtxGetCacheConfig")) return;
  reply.mutable_cache_config()->set_config(config);
}

void deviceSetCacheConfig(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const int config = request.device_set_cache_config().config();
  if (!isCacheConfig(config)) {
    refuse(reply, cudaErrorInvalidValue, "unknown cache configuration");
    return;
  }
  succeeded(ctx, ctx.gpu.setCacheConfig(static_cast<CUfunc_cache>(config)), reply, "cuCtxSetCacheConfig");
}

// Cache state only: nothing of any client's memory changes.
void resetPersistingL2Cache(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  succeeded(ctx, ctx.gpu.resetPersistingL2Cache(), reply, "cuCtxResetPersistingL2Cache");
}

}  // namespace

void registerDeviceHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kGetDeviceInfo, getDeviceInfo);
  registry.add(Op::kDeviceSynchronize, deviceSynchronize);
  registry.add(Op::kDeviceReset, deviceReset, Exclusivity::kInvalidates);
  registry.add(Op::kDeviceGetLimit, deviceGetLimit);
  // Alone within its client: a lowered stack must not meet a launch that checked the old one.
  registry.add(Op::kDeviceSetLimit, deviceSetLimit, Exclusivity::kInvalidates);
  registry.add(Op::kDeviceGetCacheConfig, deviceGetCacheConfig);
  registry.add(Op::kDeviceSetCacheConfig, deviceSetCacheConfig);
  registry.add(Op::kResetPersistingL2Cache, resetPersistingL2Cache);
}

}  // namespace agileos::worker
