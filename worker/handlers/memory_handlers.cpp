// Memory calls. Every device range is checked against the client's live
// allocations (MemoryManager::check) before the driver sees it.
#include <algorithm>
#include <limits>

#include "worker/dispatcher.h"
#include "worker/handlers/graph_memory_handlers.h"
#include "worker/handlers/stream_ordered_memory_handlers.h"
#include "worker/protected_modules/module_set.h"

namespace agileos::worker {
namespace {

// Largest payload one message may carry; clients split bigger copies (see MemcpyHtoD).
constexpr std::uint64_t kMaxChunkBytes = 64ull << 20;

// True when [offset, offset+size) lies inside [0, total) without overflow.
bool chunkInside(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

void memAlloc(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  memmgr::DevicePtr p = 0;
  if (!succeeded(ctx, ctx.memory.allocate(ctx.session.id(), request.mem_alloc().size(), &p), reply,
                 "allocate")) {
    return;
  }
  reply.mutable_device_pointer()->set_dptr(p);
}

void memFree(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const std::uint64_t p = request.mem_free().dptr();
  if (p == 0) return;
  if (ctx.session.graphMemory.isLive(p)) {
    // A graph's allocation: cudaFree synchronizes, then it is no longer live; its reservation stays
    // while a graph holds the allocation node.
    if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
    giveBackCompletedFrees(ctx);
    freeGraphAllocation(ctx, p, GraphFreeOrder{true}, reply);
    return;
  }
  if (ctx.session.streamOrdered.isFreed(p)) {
    refuse(reply, cudaErrorInvalidValue, "the allocation was already freed (cudaFreeAsync)");
    return;
  }
  // cudaFree synchronizes the device: no kernel may still use memory that is unmapped.
  if (ctx.memory.check(ctx.session.id(), p, 1) == memmgr::PointerCheck::kOk) {
    if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
    // A module's DMA registration of this allocation ends before the memory does.
    if (ctx.session.protectedModules) ctx.session.protectedModules->revokeDmaFor(p);
    // The synchronize finished every stream-ordered free's work too.
    giveBackCompletedFrees(ctx);
  }
  const CUresult result = ctx.memory.free(ctx.session.id(), p);
  if (result == CUDA_SUCCESS) ctx.session.streamOrdered.forgetAllocation(p);
  if (result == CUDA_ERROR_INVALID_VALUE) {
    refuse(reply, cudaErrorInvalidValue, "not the base of a live allocation of this client");
    return;
  }
  succeeded(ctx, result, reply, "free");
}

// With a quota, the client sees its quota as the device: total = the quota, free = what is left of
// it (never more than the device has free). Without one, the device as the driver reports it.
void memGetInfo(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  std::size_t free = 0, total = 0;
  if (!succeeded(ctx, ctx.gpu.memGetInfo(&free, &total), reply, "cuMemGetInfo")) return;
  if (const std::uint64_t quota = ctx.memory.quota(ctx.session.id()); quota != 0) {
    const std::uint64_t charged = ctx.memory.chargedBytes(ctx.session.id());
    const std::uint64_t left = charged < quota ? quota - charged : 0;
    free = static_cast<std::size_t>(std::min<std::uint64_t>(left, free));
    total = static_cast<std::size_t>(quota);
  }
  reply.mutable_mem_info()->set_free(free);
  reply.mutable_mem_info()->set_total(total);
}

// The bytes of a host-to-device copy: inline in the message, or in shared host memory.
// A copy from the staging area must have finished with the staging bytes before the
// reply (the client reuses them then); a copy from a host segment may stay enqueued,
// like a copy from pinned memory in CUDA.
void memcpyHtoD(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.memcpy_htod();
  const bool shared = args.has_source();
  if (shared && !args.data().empty()) {
    refuse(reply, cudaErrorInvalidValue, "a copy with both inline and shared bytes");
    return;
  }
  const std::uint64_t size = shared ? args.source().size() : args.data().size();
  if (!chunkInside(args.offset(), size, args.total_size())) {
    refuse(reply, cudaErrorInvalidValue, "chunk lies outside the declared copy");
    return;
  }
  if (args.total_size() == 0) return;
  if (!checkRange(ctx, args.dst(), args.total_size(), reply, "destination")) return;
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  const std::uint8_t* host = reinterpret_cast<const std::uint8_t*>(args.data().data());
  std::shared_ptr<SharedHostSegment> segment;
  if (shared) {
    std::uint8_t* mapped = nullptr;
    if (!resolveHostBuffer(ctx, args.source(), &mapped, &segment, reply)) return;
    host = mapped;
  }
  if (size == 0) return;
  if (!succeeded(ctx, ctx.gpu.copyHostToDevice(args.dst() + args.offset(), host, size, stream, args.async()),
                 reply, "cuMemcpyHtoD")) {
    return;
  }
  if (shared && args.source().segment() == 0 && args.async()) {
    succeeded(ctx, ctx.gpu.streamSynchronize(stream), reply, "cuStreamSynchronize");
  }
}

void memcpyDtoH(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.memcpy_dtoh();
  const bool shared = args.has_destination();
  if (!chunkInside(args.offset(), args.size(), args.total_size())) {
    refuse(reply, cudaErrorInvalidValue, "chunk lies outside the declared copy");
    return;
  }
  if (shared ? args.destination().size() != args.size() : args.size() > kMaxChunkBytes) {
    refuse(reply, cudaErrorInvalidValue,
           shared ? "shared destination of another size than the chunk"
                  : "chunk larger than the transport's limit");
    return;
  }
  if (args.total_size() == 0) return;
  if (!checkRange(ctx, args.src(), args.total_size(), reply, "source")) return;
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  if (shared) {
    std::uint8_t* host = nullptr;
    std::shared_ptr<SharedHostSegment> segment;
    if (!resolveHostBuffer(ctx, args.destination(), &host, &segment, reply)) return;
    if (args.size() == 0) return;
    const CUdeviceptr src = args.src() + args.offset();
    // Into a host segment, an async copy stays enqueued (the client waits on the stream,
    // as with pinned memory); into staging, the bytes must be there before the reply.
    const CUresult result = segment && args.async()
                                ? ctx.gpu.enqueueCopyDeviceToHost(host, src, args.size(), stream)
                                : ctx.gpu.copyDeviceToHost(host, src, args.size(), stream, args.async());
    succeeded(ctx, result, reply, "cuMemcpyDtoH");
    return;
  }
  std::string* data = reply.mutable_host_data()->mutable_data();
  data->resize(args.size());
  if (args.size() == 0) return;
  if (!succeeded(ctx,
                 ctx.gpu.copyDeviceToHost(data->data(), args.src() + args.offset(), args.size(), stream,
                                          args.async()),
                 reply, "cuMemcpyDtoH")) {
    reply.clear_host_data();
  }
}

void memcpyDtoD(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.memcpy_dtod();
  if (args.size() == 0) return;
  if (!checkRange(ctx, args.dst(), args.size(), reply, "destination")) return;
  if (!checkRange(ctx, args.src(), args.size(), reply, "source")) return;
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  succeeded(ctx, ctx.gpu.copyDeviceToDevice(args.dst(), args.src(), args.size(), stream, args.async()), reply,
            "cuMemcpyDtoD");
}

void memset(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.memset();
  if (args.size() == 0) return;
  if (!checkRange(ctx, args.dst(), args.size(), reply, "destination")) return;
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  succeeded(ctx,
            ctx.gpu.memsetBytes(args.dst(), static_cast<std::uint8_t>(args.value() & 0xff), args.size(),
                                stream, args.async()),
            reply, "cuMemsetD8");
}

}  // namespace

void registerMemoryHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kMemAlloc, memAlloc);
  registry.add(Op::kMemFree, memFree, Exclusivity::kInvalidates);
  registry.add(Op::kMemGetInfo, memGetInfo);
  registry.add(Op::kMemcpyHtod, memcpyHtoD);
  registry.add(Op::kMemcpyDtoh, memcpyDtoH);
  registry.add(Op::kMemcpyDtod, memcpyDtoD);
  registry.add(Op::kMemset, memset);
}

}  // namespace agileos::worker
