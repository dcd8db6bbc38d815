// Page-locked host memory shared with the client (cudaMallocHost over the
// shared-memory transport; worker/host_memory/shared_host_segment.h), mapped for the device when
// the client asks (cudaHostAllocMapped): the device's address of the segment goes back with it.
// The segment is the client's own memory (this worker's clients share nothing else through it),
// so a kernel of the client that reaches it reaches nothing it could not already copy.
//
// Quotas bound what one client can pin: a segment count and a byte total (the share of the
// daemon's host-wide pinned total it was attached with). A HostAlloc that arrives over gRPC is refused (the
// client then keeps such memory to itself, as before this transport existed).
#include <spdlog/spdlog.h>

#include "worker/dispatcher.h"

namespace agileos::worker {
namespace {

constexpr std::size_t kMaxSegmentsPerClient = 4096;

void hostAlloc(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  if (ctx.shared == nullptr) {
    refuse(reply, cudaErrorNotSupported, "shared host memory needs the shared-memory transport");
    return;
  }
  const std::uint64_t size = request.host_alloc().size();
  if (size == 0) {
    refuse(reply, cudaErrorInvalidValue, "a host allocation of 0 bytes");
    return;
  }
  if (ctx.session.hostSegments.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most host allocations a client may");
    return;
  }
  // Reserve the quota first (atomically), so concurrent calls cannot overshoot it.
  std::uint64_t used = ctx.session.hostSegmentBytes.load();
  do {
    const std::uint64_t quota = ctx.session.pinnedHostQuotaBytes;
    if (used > quota || size > quota - used || ctx.session.hostSegments.size() >= kMaxSegmentsPerClient) {
      refuse(reply, cudaErrorMemoryAllocation, "the client's page-locked host memory quota is exhausted");
      return;
    }
  } while (!ctx.session.hostSegmentBytes.compare_exchange_weak(used, used + size));
  CUresult result = CUDA_SUCCESS;
  std::string error;
  const bool mapped = (request.host_alloc().flags() & cudaHostAllocMapped) != 0;
  std::shared_ptr<SharedHostSegment> segment =
      SharedHostSegment::create(ctx.gpu, size, mapped, &result, &error);
  if (!segment) {
    ctx.session.hostSegmentBytes -= size;
    spdlog::warn("client {}: shared host allocation of {} bytes failed: {}", ctx.session.id(), size, error);
    refuse(reply, result == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : cudaErrorMemoryAllocation,
           error);
    return;
  }
  // The quota counts the requested size; correct it to the page-rounded size.
  ctx.session.hostSegmentBytes += segment->size() - size;
  const std::uint64_t mappedBytes = segment->size();
  const CUdeviceptr deviceAddress = segment->deviceAddress();
  const int fd = segment->takeFd();
  const Token token = ctx.session.hostSegments.insert(std::move(segment));
  ctx.shared->fdsToSend.push_back(fd);
  reply.mutable_host_segment()->set_segment(token);
  reply.mutable_host_segment()->set_size(mappedBytes);
  reply.mutable_host_segment()->set_device_address(deviceAddress);
}

void hostFree(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const Token token = request.host_free().segment();
  if (!ctx.session.hostSegments.find(token)) {
    refuse(reply, cudaErrorInvalidValue, "not a shared host segment of this client");
    return;
  }
  // cudaFreeHost synchronizes: no enqueued copy may still use the memory.
  if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
  if (auto segment = ctx.session.hostSegments.erase(token))
    ctx.session.hostSegmentBytes -= (*segment)->size();
}

}  // namespace

void registerHostMemoryHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kHostAlloc, hostAlloc);
  registry.add(Op::kHostFree, hostFree, Exclusivity::kInvalidates);
}

}  // namespace agileos::worker
