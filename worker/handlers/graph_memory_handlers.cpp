// Graph allocation reservations (worker/graph_memory.h). Everything the client says about its
// graphs is untrusted: it names reservations by address, and each step is checked against this
// client's own reservations and their state, so a client can make live, free or release only
// memory it reserved itself, and no memory is given back while a check may pass for it or work
// queued on the device may still use it.
#include "worker/handlers/graph_memory_handlers.h"

#include "worker/handlers/stream_ordered_memory_handlers.h"

namespace agileos::worker {
namespace {

// Gives a reservation that is no longer live back to the memory manager. Work queued before its
// free may still use it: a reservation that ever was live waits for the context first (the rare
// case of a graph destroyed while its allocation lives, or after launches; never on the path of
// a launch that keeps its graph).
void giveBackReservation(CallContext& ctx, memmgr::DevicePtr base, bool everLive, bool synchronized,
                         v1::CallReply& reply) {
  if (everLive && !synchronized && !succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) {
    // The memory stays reserved (and charged) until the session ends: never given back under work
    // that may still use it.
    return;
  }
  succeeded(ctx, ctx.memory.freeGraphReservation(ctx.session.id(), base), reply, "free graph reservation");
}

void reserve(CallContext& ctx, std::uint64_t size, v1::CallReply& reply) {
  if (size == 0) {
    refuse(reply, cudaErrorInvalidValue, "a graph allocation of 0 bytes");
    return;
  }
  if (ctx.session.graphMemory.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "too many graph allocations");
    return;
  }
  memmgr::DevicePtr base = 0;
  CUresult result = ctx.memory.allocateGraphReservation(ctx.session.id(), size, &base);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    // As for cudaMallocAsync: the stream-ordered frees still pending go first.
    ctx.session.streamOrdered.waitForPendingFrees(ctx.gpu);
    giveBackCompletedFrees(ctx);
    result = ctx.memory.allocateGraphReservation(ctx.session.id(), size, &base);
  }
  if (!succeeded(ctx, result, reply, "reserve graph allocation")) return;
  ctx.session.graphMemory.noteReserved(base, size);
  reply.mutable_stream_ordered_memory_result()->set_address(base);
}

void activate(CallContext& ctx, memmgr::DevicePtr base, v1::CallReply& reply) {
  switch (ctx.session.graphMemory.activate(base)) {
    case GraphMemory::Outcome::kDone:
      ctx.memory.setGraphAllocationLive(ctx.session.id(), base, true);
      return;
    case GraphMemory::Outcome::kWrongState:
      // cudaGraphLaunch's error for a graph whose allocation was not freed since its last launch.
      refuse(reply, cudaErrorInvalidValue, "the graph allocation is live (not freed since the last launch)");
      return;
    default:
      refuse(reply, cudaErrorInvalidValue, "not a graph allocation of this client");
      return;
  }
}

void release(CallContext& ctx, memmgr::DevicePtr base, v1::CallReply& reply) {
  bool everLive = false;
  switch (ctx.session.graphMemory.release(base, &everLive)) {
    case GraphMemory::Outcome::kRelease:
      giveBackReservation(ctx, base, everLive, false, reply);
      return;
    case GraphMemory::Outcome::kDone:
      return;  // live: it goes when it is freed
    default:
      refuse(reply, cudaErrorInvalidValue, "not a graph allocation of this client");
      return;
  }
}

void usage(CallContext& ctx, v1::CallReply& reply) {
  const GraphMemory::Usage usage = ctx.session.graphMemory.usage();
  auto* result = reply.mutable_stream_ordered_memory_result();
  result->set_used_bytes(usage.usedBytes);
  result->set_used_high(usage.usedHigh);
  result->set_reserved_bytes(usage.reservedBytes);
  result->set_reserved_high(usage.reservedHigh);
}

}  // namespace

void graphMemoryStep(CallContext& ctx, const v1::StreamOrderedMemory& args, v1::CallReply& reply) {
  switch (args.step()) {
    case v1::StreamOrderedMemory::GRAPH_RESERVE:
      reserve(ctx, args.size(), reply);
      return;
    case v1::StreamOrderedMemory::GRAPH_ACTIVATE:
      activate(ctx, args.address(), reply);
      return;
    case v1::StreamOrderedMemory::GRAPH_RELEASE:
      release(ctx, args.address(), reply);
      return;
    case v1::StreamOrderedMemory::GRAPH_USAGE:
      usage(ctx, reply);
      return;
    case v1::StreamOrderedMemory::GRAPH_RESET_USED_HIGH:
      ctx.session.graphMemory.resetUsedHigh();
      return;
    case v1::StreamOrderedMemory::GRAPH_RESET_RESERVED_HIGH:
      ctx.session.graphMemory.resetReservedHigh();
      return;
    default:
      refuse(reply, cudaErrorInvalidValue, "unknown stream-ordered memory step");
      return;
  }
}

bool freeGraphAllocation(CallContext& ctx, memmgr::DevicePtr base, bool synchronized, v1::CallReply& reply) {
  if (base == 0 || !ctx.session.graphMemory.isReservation(base)) return false;
  switch (ctx.session.graphMemory.deactivate(base)) {
    case GraphMemory::Outcome::kDone:
      // Not live from here on; the memory stays reserved for the graph's next launch, so work
      // queued before this free may go on using it.
      ctx.memory.setGraphAllocationLive(ctx.session.id(), base, false);
      return true;
    case GraphMemory::Outcome::kRelease:
      ctx.memory.setGraphAllocationLive(ctx.session.id(), base, false);
      giveBackReservation(ctx, base, true, synchronized, reply);
      return true;
    default:
      refuse(reply, cudaErrorInvalidValue,
             "the graph allocation is not live (not allocated, or freed already)");
      return true;
  }
}

}  // namespace agileos::worker
