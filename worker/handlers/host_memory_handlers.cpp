// Page-locked host memory shared with the client (cudaMallocHost over the
// shared-memory transport; worker/host_memory/shared_host_segment.h), mapped for the device when
// the client asks (cudaHostAllocMapped): the device's address of the segment goes back with it.
// The segment is the client's own memory (this worker's clients share nothing else through it),
// so a kernel of the client that reaches it reaches nothing it could not already copy.
//
// Quotas bound what one client can pin: a segment count and a byte total (the share of the
// daemon's host-wide pinned total it was attached with). A HostAlloc that arrives over gRPC is refused (the
// client then keeps such memory to itself, as before this transport existed).
//
// Managed memory (HostAlloc.managed, cudaMallocManaged) is such a segment placed in the managed
// window (memmgr/address_layout.h) at an address from a bump allocator (an address comes back
// only after the whole 16 TiB window has been handed out, so a stale pointer of a freed segment
// almost never reaches a later allocation; a client that churns through the window only makes
// the allocator start over, never overlap a live segment: MAP_FIXED_NOREPLACE), mapped for the
// device there: the client maps it at the same address, so its pointer works in kernels and on
// the host alike.
#include <spdlog/spdlog.h>

#include "memmgr/address_layout.h"
#include "worker/dispatcher.h"
#include "worker/host_memory/managed_addresses.h"

namespace agileos::worker {
namespace {

constexpr std::size_t kMaxSegmentsPerClient = 4096;

ManagedAddresses gManagedAddresses{memmgr::kManagedWindow};

// A managed segment: placed in the window, trying further addresses where this process already
// has something mapped (a library, a thread's stack).
std::shared_ptr<SharedHostSegment> createManaged(GpuBackend& gpu, std::uint64_t size, CUresult* result,
                                                 std::string* error) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::uint64_t at = gManagedAddresses.take(size);
    if (at == 0) {
      *result = CUDA_ERROR_OUT_OF_MEMORY;
      *error = "larger than the managed window";
      return nullptr;
    }
    bool taken = false;
    auto segment = SharedHostSegment::create(gpu, size, true, result, error, at, &taken);
    if (segment || !taken) return segment;
    // Something of this process lies there (the driver may reserve large ranges).
    gManagedAddresses.skipPast(at);
  }
  return nullptr;
}

// Reserves `size` bytes of the client's pinned-host quota (atomically, so concurrent calls cannot
// overshoot it) and creates the segment; gives the reservation back and refuses otherwise.
std::shared_ptr<SharedHostSegment> createSegment(CallContext& ctx, std::uint64_t size, bool managed,
                                                 bool mapped, v1::CallReply& reply) {
  if (ctx.session.hostSegments.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most host allocations a client may");
    return nullptr;
  }
  std::uint64_t used = ctx.session.hostSegmentBytes.load();
  do {
    const std::uint64_t quota = ctx.session.pinnedHostQuotaBytes;
    if (used > quota || size > quota - used || ctx.session.hostSegments.size() >= kMaxSegmentsPerClient) {
      refuse(reply, cudaErrorMemoryAllocation, "the client's page-locked host memory quota is exhausted");
      return nullptr;
    }
  } while (!ctx.session.hostSegmentBytes.compare_exchange_weak(used, used + size));
  CUresult result = CUDA_SUCCESS;
  std::string error;
  std::shared_ptr<SharedHostSegment> segment =
      managed ? createManaged(ctx.gpu, size, &result, &error)
              : SharedHostSegment::create(ctx.gpu, size, mapped, &result, &error);
  if (!segment) {
    ctx.session.hostSegmentBytes -= size;
    spdlog::warn("client {}: shared host allocation of {} bytes failed: {}", ctx.session.id(), size, error);
    refuse(reply,
           result == CUDA_ERROR_INVALID_VALUE   ? cudaErrorInvalidValue
           : result == CUDA_ERROR_NOT_SUPPORTED ? cudaErrorNotSupported
                                                : cudaErrorMemoryAllocation,
           error);
    return nullptr;
  }
  // The quota counts the requested size; correct it to the page-rounded size.
  ctx.session.hostSegmentBytes += segment->size() - size;
  return segment;
}

// Gives the segment to the client: its token, size and device address in the reply, its fd
// passed right before the reply.
Token publishSegment(CallContext& ctx, std::shared_ptr<SharedHostSegment> segment, v1::CallReply& reply) {
  const std::uint64_t mappedBytes = segment->size();
  const CUdeviceptr deviceAddress = segment->deviceAddress();
  const int fd = segment->takeFd();
  const Token token = ctx.session.hostSegments.insert(std::move(segment));
  ctx.shared->fdsToSend.push_back(fd);
  reply.mutable_host_segment()->set_segment(token);
  reply.mutable_host_segment()->set_size(mappedBytes);
  reply.mutable_host_segment()->set_device_address(deviceAddress);
  return token;
}

// A __managed__ variable's memory (worker/host_memory/managed_variables.h): a managed segment
// of the variable's size holding its initial bytes, whose address goes into the module's slot.
void bindManagedVariable(CallContext& ctx, const v1::HostAlloc& args, v1::CallReply& reply) {
  const v1::ManagedVariableRef& ref = args.managed_variable();
  const std::optional<ModuleRecord> module = ctx.session.modules.find(ref.module());
  if (!args.managed() || !module) {
    refuse(reply, cudaErrorInvalidValue, "a managed variable's memory names no module of this client");
    return;
  }
  ManagedVariableBinding variable;
  if (!module->managed || !module->managed->claim(ref.name(), &variable)) {
    refuse(reply, cudaErrorInvalidSymbol, "not a __managed__ variable of the module, or already bound");
    return;
  }
  if (args.size() != variable.bytes) {
    module->managed->finish(ref.name(), 0);
    refuse(reply, cudaErrorInvalidValue, "the size asked is not the managed variable's");
    return;
  }
  std::shared_ptr<SharedHostSegment> segment = createSegment(ctx, variable.bytes, true, true, reply);
  if (!segment) {
    module->managed->finish(ref.name(), 0);
    return;
  }
  // Synchronous copies on the legacy default stream: the module was just loaded, and its kernels
  // read the slot only after this reply (the client launches them after binding).
  const std::uint64_t address = segment->deviceAddress();
  if (!succeeded(ctx,
                 ctx.gpu.copyDeviceToHost(segment->base(), variable.initial, variable.bytes, nullptr, false),
                 reply, "cuMemcpyDtoH") ||
      !succeeded(ctx, ctx.gpu.copyHostToDevice(variable.slot, &address, sizeof address, nullptr, false),
                 reply, "cuMemcpyHtoD")) {
    ctx.session.hostSegmentBytes -= segment->size();
    module->managed->finish(ref.name(), 0);
    return;
  }
  module->managed->finish(ref.name(), publishSegment(ctx, std::move(segment), reply));
}

void hostAlloc(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  if (ctx.shared == nullptr) {
    refuse(reply, cudaErrorNotSupported, "shared host memory needs the shared-memory transport");
    return;
  }
  const v1::HostAlloc& args = request.host_alloc();
  if (args.size() == 0) {
    refuse(reply, cudaErrorInvalidValue, "a host allocation of 0 bytes");
    return;
  }
  if (args.has_managed_variable()) {
    bindManagedVariable(ctx, args, reply);
    return;
  }
  const bool managed = args.managed();
  const bool mapped = managed || (args.flags() & cudaHostAllocMapped) != 0;
  if (std::shared_ptr<SharedHostSegment> segment = createSegment(ctx, args.size(), managed, mapped, reply))
    publishSegment(ctx, std::move(segment), reply);
}

void hostFree(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const Token token = request.host_free().segment();
  if (!ctx.session.hostSegments.find(token)) {
    refuse(reply, cudaErrorInvalidValue, "not a shared host segment of this client");
    return;
  }
  if (isManagedVariableSegment(ctx.session, token)) {
    refuse(reply, cudaErrorInvalidValue, "the memory of a __managed__ variable goes with its module");
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
