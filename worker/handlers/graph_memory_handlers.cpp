// Graph allocations (worker/graph_memory.h). Everything the client says about its graphs is
// untrusted: it names reservations by address, and each step is checked against this client's own
// reservations and their state, so a client can make live, free or release only memory it reserved
// itself; GraphMemory unmaps and gives back nothing while work queued on the device may still use
// it.
#include "worker/handlers/graph_memory_handlers.h"

#include "worker/handlers/stream_ordered_memory_handlers.h"

namespace agileos::worker {
namespace {

// The memory manager's graph blocks and reservations, and the GPU, for the calling client.
class SessionGraphBacking final : public GraphBacking {
 public:
  explicit SessionGraphBacking(CallContext& ctx) : ctx_(ctx) {}

  CUresult createBlock(std::uint64_t size, std::uint64_t* block) override {
    CUresult result = ctx_.memory.createGraphBlock(ctx_.session.id(), size, block);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
      // As for cudaMallocAsync: the stream-ordered frees still pending go first.
      ctx_.session.streamOrdered.waitForPendingFrees(ctx_.gpu);
      giveBackCompletedFrees(ctx_);
      result = ctx_.memory.createGraphBlock(ctx_.session.id(), size, block);
    }
    return result;
  }
  CUresult destroyBlock(std::uint64_t block) override {
    return ctx_.memory.destroyGraphBlock(ctx_.session.id(), block);
  }
  CUresult map(memmgr::DevicePtr reservation, std::uint64_t block) override {
    return ctx_.memory.mapGraphBlock(ctx_.session.id(), reservation, block);
  }
  CUresult unmap(memmgr::DevicePtr reservation) override {
    return ctx_.memory.unmapGraphReservation(ctx_.session.id(), reservation);
  }
  CUresult freeReservation(memmgr::DevicePtr reservation) override {
    return ctx_.memory.freeGraphReservation(ctx_.session.id(), reservation);
  }
  bool setLive(memmgr::DevicePtr reservation, bool live) override {
    return ctx_.memory.setGraphAllocationLive(ctx_.session.id(), reservation, live);
  }
  CUresult synchronize() override { return ctx_.gpu.synchronizeContext(); }
  bool completed(CUevent event) override { return ctx_.gpu.eventQuery(event) == CUDA_SUCCESS; }
  void destroyEvent(CUevent event) override { ctx_.gpu.eventDestroy(event); }

 private:
  CallContext& ctx_;
};

// The reply for what GraphMemory answered.
void answered(CallContext& ctx, GraphMemory::Outcome outcome, CUresult failure, const char* wrongState,
              const char* what, v1::CallReply& reply) {
  switch (outcome) {
    case GraphMemory::Outcome::kDone:
      return;
    case GraphMemory::Outcome::kWrongState:
      refuse(reply, cudaErrorInvalidValue, wrongState);
      return;
    case GraphMemory::Outcome::kFailed:
      succeeded(ctx, failure, reply, what);
      return;
    default:
      refuse(reply, cudaErrorInvalidValue, "not a graph allocation of this client");
      return;
  }
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
  // Address space only: the memory comes when a launch runs the allocation node.
  if (!succeeded(ctx, ctx.memory.reserveGraphAddress(ctx.session.id(), size, &base), reply,
                 "reserve graph allocation")) {
    return;
  }
  ctx.session.graphMemory.noteReserved(base, ctx.memory.graphSpan(size));
  reply.mutable_stream_ordered_memory_result()->set_address(base);
}

void activate(CallContext& ctx, const v1::StreamOrderedMemory& args, v1::CallReply& reply) {
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  SessionGraphBacking backing(ctx);
  CUresult failure = CUDA_SUCCESS;
  const GraphMemory::Outcome outcome =
      ctx.session.graphMemory.activate(backing, args.address(), streamIdentity(args.stream()), &failure);
  // cudaGraphLaunch's error for a graph whose allocation was not freed since its last launch.
  answered(ctx, outcome, failure, "the graph allocation is live (not freed since the last launch)",
           "graph allocation", reply);
}

void release(CallContext& ctx, memmgr::DevicePtr base, v1::CallReply& reply) {
  SessionGraphBacking backing(ctx);
  CUresult failure = CUDA_SUCCESS;
  answered(ctx, ctx.session.graphMemory.release(backing, base, &failure), failure, "",
           "release graph allocation", reply);
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
      activate(ctx, args, reply);
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
    case v1::StreamOrderedMemory::GRAPH_TRIM: {
      SessionGraphBacking backing(ctx);
      succeeded(ctx, ctx.session.graphMemory.trim(backing), reply, "trim graph memory");
      return;
    }
    default:
      refuse(reply, cudaErrorInvalidValue, "unknown stream-ordered memory step");
      return;
  }
}

bool freeGraphAllocation(CallContext& ctx, memmgr::DevicePtr base, const GraphFreeOrder& order,
                         v1::CallReply& reply) {
  if (base == 0 || !ctx.session.graphMemory.isReservation(base)) return false;
  CUevent event = nullptr;
  if (!order.synchronized) {
    // The block is free for other allocations from here on the free's stream; elsewhere, once the
    // work before it has finished.
    if (!succeeded(ctx, ctx.gpu.eventCreate(CU_EVENT_DISABLE_TIMING, &event), reply, "cuEventCreate"))
      return true;
    if (!succeeded(ctx, ctx.gpu.eventRecord(event, order.stream, 0), reply, "cuEventRecord")) {
      ctx.gpu.eventDestroy(event);
      return true;
    }
  }
  SessionGraphBacking backing(ctx);
  CUresult failure = CUDA_SUCCESS;
  const GraphMemory::Outcome outcome =
      ctx.session.graphMemory.deactivate(backing, base, event, order.streamIdentity, &failure);
  answered(ctx, outcome, failure, "the graph allocation is not live (not allocated, or freed already)",
           "free graph allocation", reply);
  return true;
}

}  // namespace agileos::worker
