// The driver's virtual-memory API for a client (cuMemAddressReserve, cuMemCreate, cuMemMap, ...):
// every step is the memory manager's (memmgr/memory_manager.h), which confines reservations to the
// user range and names handles and mappings per client; this handler only adds what the device
// needs (the wait before memory is unmapped) and the client's error detail.
#include "worker/dispatcher.h"

namespace agileos::worker {
namespace {

using Step = v1::VirtualMemory::Step;

// CUDA_ERROR_INVALID_VALUE from the memory manager means the client named something that is not
// its own, or a size or address off the granularity: said once here for every step.
bool done(CallContext& ctx, CUresult result, v1::CallReply& reply, const char* what) {
  if (result == CUDA_ERROR_INVALID_VALUE) {
    return refuse(reply, cudaErrorInvalidValue,
                  std::string(what) +
                      ": not a reservation, mapping or allocation of this client, or a size or "
                      "address that is not a multiple of the granularity");
  }
  return succeeded(ctx, result, reply, what);
}

void virtualMemory(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const v1::VirtualMemory& args = request.virtual_memory();
  const memmgr::ClientId client = ctx.session.id();
  switch (args.step()) {
    case v1::VirtualMemory::RESERVE: {
      memmgr::DevicePtr base = 0;
      if (done(ctx, ctx.memory.reserveAddress(client, args.size(), args.alignment(), &base), reply,
               "cuMemAddressReserve")) {
        reply.mutable_virtual_memory_result()->set_address(base);
      }
      return;
    }
    case v1::VirtualMemory::FREE_ADDRESS:
      done(ctx, ctx.memory.freeAddress(client, args.address(), args.size()), reply, "cuMemAddressFree");
      return;
    case v1::VirtualMemory::CREATE: {
      std::uint64_t handle = 0;
      bool compressed = false;
      if (done(ctx, ctx.memory.createPhysical(client, args.size(), &handle, args.compressible(), &compressed),
               reply, "cuMemCreate")) {
        reply.mutable_virtual_memory_result()->set_handle(handle);
        reply.mutable_virtual_memory_result()->set_compressed(compressed);
      }
      return;
    }
    case v1::VirtualMemory::RELEASE:
      // Memory goes only once nothing maps it, and every unmap waited for the device.
      done(ctx, ctx.memory.releasePhysical(client, args.handle()), reply, "cuMemRelease");
      return;
    case v1::VirtualMemory::MAP:
      done(ctx, ctx.memory.mapPhysical(client, args.address(), args.size(), args.handle()), reply,
           "cuMemMap");
      return;
    case v1::VirtualMemory::UNMAP:
      if (!ctx.memory.coversMappings(client, args.address(), args.size())) {
        done(ctx, CUDA_ERROR_INVALID_VALUE, reply, "cuMemUnmap");
        return;
      }
      // No kernel may still use memory that is unmapped (cuMemUnmap is synchronous, as cudaFree).
      if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
      done(ctx, ctx.memory.unmapRange(client, args.address(), args.size()), reply, "cuMemUnmap");
      return;
    case v1::VirtualMemory::SET_ACCESS:
      // Mappings are read/write for the device from cuMemMap on; the range must be mappings.
      done(ctx,
           ctx.memory.coversMappings(client, args.address(), args.size()) ? CUDA_SUCCESS
                                                                          : CUDA_ERROR_INVALID_VALUE,
           reply, "cuMemSetAccess");
      return;
    case v1::VirtualMemory::GRANULARITY:
      reply.mutable_virtual_memory_result()->set_granularity(ctx.memory.granularity());
      return;
    case v1::VirtualMemory::ALLOCATION_OF: {
      std::uint64_t handle = 0, size = 0;
      if (!ctx.memory.mappedAllocation(client, args.address(), &handle, &size)) {
        done(ctx, CUDA_ERROR_INVALID_VALUE, reply, "cuMemGetAccess");
        return;
      }
      reply.mutable_virtual_memory_result()->set_handle(handle);
      reply.mutable_virtual_memory_result()->set_size(size);
      return;
    }
    case v1::VirtualMemory::RETAIN: {
      std::uint64_t handle = 0;
      if (done(ctx, ctx.memory.retainPhysical(client, args.address(), &handle), reply,
               "cuMemRetainAllocationHandle")) {
        reply.mutable_virtual_memory_result()->set_handle(handle);
      }
      return;
    }
    default:
      refuse(reply, cudaErrorInvalidValue, "unknown virtual-memory step");
  }
}

}  // namespace

void registerVirtualMemoryHandlers(HandlerRegistry& registry) {
  // Exclusive: an unmap or a release invalidates addresses other calls of the client may be using.
  registry.add(v1::CallRequest::kVirtualMemory, virtualMemory, Exclusivity::kInvalidates);
}

}  // namespace agileos::worker
