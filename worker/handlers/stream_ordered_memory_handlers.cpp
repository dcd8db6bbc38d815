// Stream-ordered allocation and memory pools (proto StreamOrderedMemory). The memory is the
// memory manager's, allocated and checked like cudaMalloc's; the session's StreamOrderedMemory
// (worker/stream_ordered_memory.h) holds each free until the work queued before it on its stream
// has finished.
#include "worker/handlers/stream_ordered_memory_handlers.h"

#include <vector>

#include "worker/dispatcher.h"
#include "worker/handlers/graph_memory_handlers.h"
#include "worker/protected_modules/module_set.h"

namespace agileos::worker {

namespace {

void giveBack(CallContext& ctx, const std::vector<memmgr::DevicePtr>& bases) {
  for (memmgr::DevicePtr base : bases) {
    // A module's DMA registration of this allocation ends before the memory does (as in cudaFree).
    if (ctx.session.protectedModules) ctx.session.protectedModules->revokeDmaFor(base);
    ctx.memory.free(ctx.session.id(), base);
  }
}

bool knownPool(CallContext& ctx, std::uint64_t pool, v1::CallReply& reply) {
  if (ctx.session.streamOrdered.poolExists(pool)) return true;
  return refuse(reply, cudaErrorInvalidValue, "not a memory pool of this client");
}

void allocate(CallContext& ctx, const v1::StreamOrderedMemory& args, v1::CallReply& reply) {
  if (!knownPool(ctx, args.pool(), reply)) return;
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  if (args.size() == 0) {
    // cudaMallocAsync of 0 bytes succeeds with a null pointer, as natively.
    reply.mutable_stream_ordered_memory_result()->set_address(0);
    return;
  }
  // First, as the driver does: a range freed on this very stream, whose earlier work the new
  // allocation's work follows in stream order; then a range the pool keeps cached (its release
  // threshold) of exactly this size.
  StreamOrderedMemory& pools = ctx.session.streamOrdered;
  if (const memmgr::DevicePtr reused =
          pools.takePendingOnStream(ctx.gpu, args.pool(), args.size(), streamIdentity(args.stream()))) {
    reply.mutable_stream_ordered_memory_result()->set_address(reused);
    return;
  }
  if (const memmgr::DevicePtr cached = pools.takeCached(args.pool(), args.size())) {
    reply.mutable_stream_ordered_memory_result()->set_address(cached);
    return;
  }
  if (!pools.fits(args.pool(), args.size())) {
    refuse(reply, cudaErrorMemoryAllocation, "the memory pool's maximum size would be exceeded");
    return;
  }
  memmgr::DevicePtr base = 0;
  CUresult result = ctx.memory.allocate(ctx.session.id(), args.size(), &base);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    // Before the allocation fails: the frees still pending are waited for and given back, with
    // what the pools keep cached.
    pools.waitForPendingFrees(ctx.gpu);
    giveBackCompletedFrees(ctx);
    const std::vector<memmgr::DevicePtr> cached = pools.takeAllCached();
    giveBack(ctx, cached);
    result = ctx.memory.allocate(ctx.session.id(), args.size(), &base);
  }
  if (!succeeded(ctx, result, reply, "allocate")) return;
  pools.noteAllocated(args.pool(), base, args.size());
  reply.mutable_stream_ordered_memory_result()->set_address(base);
}

void freeInStreamOrder(CallContext& ctx, const v1::StreamOrderedMemory& args, v1::CallReply& reply) {
  const memmgr::DevicePtr base = args.address();
  if (base == 0) return;  // cudaFreeAsync(nullptr) does nothing, as natively
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  // A graph's allocation (a free node, or cudaFreeAsync of it): it stops being live, and its
  // reservation stays for the graph's next launch.
  if (freeGraphAllocation(ctx, base, GraphFreeOrder{false, stream, streamIdentity(args.stream())}, reply))
    return;
  if (ctx.session.streamOrdered.isFreed(base) ||
      !ctx.memory.isUserAllocationBase(ctx.session.id(), base, nullptr)) {
    refuse(reply, cudaErrorInvalidValue, "not the base of a live allocation of this client");
    return;
  }
  CUevent event = nullptr;
  if (!succeeded(ctx, ctx.gpu.eventCreate(CU_EVENT_DISABLE_TIMING, &event), reply, "cuEventCreate")) return;
  if (!succeeded(ctx, ctx.gpu.eventRecord(event, stream, 0), reply, "cuEventRecord")) {
    ctx.gpu.eventDestroy(event);
    return;
  }
  ctx.session.streamOrdered.notePendingFree(base, event, streamIdentity(args.stream()));
}

void usage(CallContext& ctx, std::uint64_t pool, v1::CallReply& reply) {
  const StreamOrderedMemory::Usage usage = ctx.session.streamOrdered.usage(pool);
  auto* result = reply.mutable_stream_ordered_memory_result();
  result->set_used_bytes(usage.usedBytes);
  result->set_used_high(usage.usedHigh);
  result->set_reserved_bytes(usage.reservedBytes);
  result->set_reserved_high(usage.reservedHigh);
}

void streamOrderedMemory(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const v1::StreamOrderedMemory& args = request.stream_ordered_memory();
  giveBackCompletedFrees(ctx);
  StreamOrderedMemory& pools = ctx.session.streamOrdered;
  switch (args.step()) {
    case v1::StreamOrderedMemory::ALLOC:
      allocate(ctx, args, reply);
      return;
    case v1::StreamOrderedMemory::FREE:
      freeInStreamOrder(ctx, args, reply);
      return;
    case v1::StreamOrderedMemory::POOL_CREATE: {
      const std::uint64_t pool = pools.createPool(args.size());
      if (pool == 0) {
        refuse(reply, cudaErrorMemoryAllocation, "too many memory pools");
        return;
      }
      reply.mutable_stream_ordered_memory_result()->set_pool(pool);
      return;
    }
    case v1::StreamOrderedMemory::POOL_DESTROY: {
      std::vector<memmgr::DevicePtr> release;
      if (!pools.destroyPool(args.pool(), &release)) {
        refuse(reply, cudaErrorInvalidValue, "not an explicit memory pool of this client");
      }
      giveBack(ctx, release);
      return;
    }
    case v1::StreamOrderedMemory::POOL_TRIM:
      if (knownPool(ctx, args.pool(), reply)) giveBack(ctx, pools.trim(args.pool(), args.size()));
      return;
    case v1::StreamOrderedMemory::POOL_SET_RELEASE_THRESHOLD: {
      if (!knownPool(ctx, args.pool(), reply)) return;
      std::vector<memmgr::DevicePtr> release;
      pools.setReleaseThreshold(args.pool(), args.size(), &release);
      giveBack(ctx, release);
      return;
    }
    case v1::StreamOrderedMemory::POOL_USAGE:
      if (knownPool(ctx, args.pool(), reply)) usage(ctx, args.pool(), reply);
      return;
    case v1::StreamOrderedMemory::POOL_RESET_USED_HIGH:
      if (knownPool(ctx, args.pool(), reply)) pools.resetUsedHigh(args.pool());
      return;
    case v1::StreamOrderedMemory::POOL_RESET_RESERVED_HIGH:
      if (knownPool(ctx, args.pool(), reply)) pools.resetReservedHigh(args.pool());
      return;
    default:
      graphMemoryStep(ctx, args, reply);
      return;
  }
}

}  // namespace

void giveBackCompletedFrees(CallContext& ctx) {
  giveBack(ctx, ctx.session.streamOrdered.takeCompletedFrees(ctx.gpu));
}

void registerStreamOrderedMemoryHandlers(HandlerRegistry& registry) {
  // Exclusive: a completed free given back invalidates addresses other calls may be using.
  registry.add(v1::CallRequest::kStreamOrderedMemory, streamOrderedMemory, Exclusivity::kInvalidates);
}

}  // namespace agileos::worker
