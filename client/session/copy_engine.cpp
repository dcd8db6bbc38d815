#include "client/session/copy_engine.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "client/common/connection.h"
#include "client/session/device_allocations.h"
#include "client/session/error_state.h"
#include "client/session/host_allocations.h"
#include "client/session/module_registry.h"
#include "client/session/parallel_copy.h"
#include "client/session/stream_capture.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"

namespace agileos::client {

namespace {

// The fields every message of one copy shares: the whole copy's range and its stream.
// Each chunk then sets its offset and its bytes (inline or in shared memory).
v1::CallRequest hostToDeviceRequest(std::uint64_t dst, std::uint64_t bytes, const CopyTarget& target) {
  v1::CallRequest request;
  v1::MemcpyHtoD* copy = request.mutable_memcpy_htod();
  copy->set_dst(dst);
  copy->set_total_size(bytes);
  copy->set_stream(target.stream);
  copy->set_async(target.async);
  return request;
}

v1::CallRequest deviceToHostRequest(std::uint64_t src, std::uint64_t bytes, const CopyTarget& target) {
  v1::CallRequest request;
  v1::MemcpyDtoH* copy = request.mutable_memcpy_dtoh();
  copy->set_src(src);
  copy->set_total_size(bytes);
  copy->set_stream(target.stream);
  copy->set_async(target.async);
  return request;
}

// A copy (or a fill) on `target.stream` leaves work there unless the call waits for it.
void noteStreamWork(const CopyTarget& target) {
  if (target.async) noteWorkPosted(target.stream);
}

// Sends a copy whose bytes are already in memory shared with the worker (or that moves
// no host bytes). An *Async call on a range the client knows to be its own goes out
// without waiting; a synchronous one that was stream-ordered (the per-thread default
// stream's spelling) then waits for its stream, since the worker may have left the copy
// enqueued.
cudaError_t sendCopy(const v1::CallRequest& request, const CopyTarget& target, bool surelyValid) {
  if (target.returnsEarly && surelyValid) return invokeAsync(request);
  v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  if (error != cudaSuccess || target.returnsEarly || !target.async) return error;
  v1::CallRequest wait;
  wait.mutable_stream_synchronize()->set_stream(target.stream);
  v1::CallReply waited;
  return invoke(wait, &waited);
}

cudaError_t transportLost() { return cudaErrorDevicesUnavailable; }

cudaError_t stagedHostToDevice(StagedCalls& staged, std::uint64_t dst, const char* src, std::uint64_t bytes,
                               const CopyTarget& target) {
  const std::uint32_t chunks = staged.chunkCount();
  const std::uint64_t chunkBytes = staged.chunkBytes();
  v1::CallRequest request = hostToDeviceRequest(dst, bytes, target);
  v1::MemcpyHtoD* copy = request.mutable_memcpy_htod();
  std::uint64_t offset = 0;
  std::uint64_t index = 0;
  std::uint32_t inFlight = 0;
  cudaError_t first = cudaSuccess;
  for (;;) {
    if (first == cudaSuccess && offset < bytes && inFlight < chunks) {
      // Chunk `index` reuses the slot of chunk index - chunks, whose reply has arrived.
      const std::uint64_t size = std::min(chunkBytes, bytes - offset);
      const auto slot = static_cast<std::uint32_t>(index % chunks);
      parallelCopy(staged.chunk(slot), src + offset, size);
      copy->set_offset(offset);
      staged.describeChunk(slot, size, copy->mutable_source());
      if (staged.submit(request) != TransportStatus::kOk) return transportLost();
      ++inFlight;
      ++index;
      offset += size;
      continue;
    }
    if (inFlight == 0) return first;
    v1::CallReply reply;
    if (staged.next(&reply) != TransportStatus::kOk) return transportLost();
    --inFlight;
    if (cudaError_t error = absorbReply(request, reply); error != cudaSuccess && first == cudaSuccess) {
      first = error;
    }
  }
}

cudaError_t stagedDeviceToHost(StagedCalls& staged, char* dst, std::uint64_t src, std::uint64_t bytes,
                               const CopyTarget& target) {
  const std::uint32_t chunks = staged.chunkCount();
  const std::uint64_t chunkBytes = staged.chunkBytes();
  const std::uint64_t chunkTotal = (bytes + chunkBytes - 1) / chunkBytes;
  v1::CallRequest request = deviceToHostRequest(src, bytes, target);
  v1::MemcpyDtoH* copy = request.mutable_memcpy_dtoh();
  auto sizeOf = [&](std::uint64_t index) { return std::min(chunkBytes, bytes - index * chunkBytes); };
  std::uint64_t submitted = 0;
  std::uint64_t received = 0;
  cudaError_t first = cudaSuccess;
  while (received < submitted || (first == cudaSuccess && submitted < chunkTotal)) {
    if (first == cudaSuccess && submitted < chunkTotal && submitted - received < chunks) {
      const auto slot = static_cast<std::uint32_t>(submitted % chunks);
      copy->set_offset(submitted * chunkBytes);
      copy->set_size(sizeOf(submitted));
      staged.describeChunk(slot, sizeOf(submitted), copy->mutable_destination());
      if (staged.submit(request) != TransportStatus::kOk) return transportLost();
      ++submitted;
      continue;
    }
    v1::CallReply reply;
    if (staged.next(&reply) != TransportStatus::kOk) return transportLost();
    const cudaError_t error = absorbReply(request, reply);
    if (error != cudaSuccess && first == cudaSuccess) first = error;
    if (first == cudaSuccess) {
      // The worker has filled chunk `received`; it refills the other slots meanwhile.
      const auto slot = static_cast<std::uint32_t>(received % chunks);
      parallelCopy(dst + received * chunkBytes, staged.chunk(slot), sizeOf(received));
    }
    ++received;
  }
  return first;
}

}  // namespace

static cudaError_t copyHostToDeviceNow(std::uint64_t dst, const void* src, std::uint64_t bytes,
                                       CopyTarget target) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  noteStreamWork(target);
  if (auto shared = HostAllocations::instance().sharedRange(src, bytes)) {
    v1::CallRequest request = hostToDeviceRequest(dst, bytes, target);
    v1::HostBuffer* source = request.mutable_memcpy_htod()->mutable_source();
    source->set_segment(shared->segment);
    source->set_offset(shared->offset);
    source->set_size(bytes);
    return sendCopy(request, target, surelyDeviceRange(dst, bytes));
  }
  const auto* bytesIn = static_cast<const char*>(src);
  if (std::unique_ptr<StagedCalls> staged = Connection::instance().stage();
      staged != nullptr && staged->chunkCount() > 0) {
    return stagedHostToDevice(*staged, dst, bytesIn, bytes, target);
  }
  std::uint64_t offset = 0;
  do {
    const std::uint64_t chunk = std::min(kCopyChunkBytes, bytes - offset);
    v1::CallRequest request = hostToDeviceRequest(dst, bytes, target);
    request.mutable_memcpy_htod()->set_offset(offset);
    request.mutable_memcpy_htod()->set_data(bytesIn + offset, chunk);
    v1::CallReply reply;
    if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
    offset += chunk;
  } while (offset < bytes);
  return cudaSuccess;
}

static cudaError_t copyDeviceToHostNow(void* dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  noteStreamWork(target);
  if (auto shared = HostAllocations::instance().sharedRange(dst, bytes)) {
    v1::CallRequest request = deviceToHostRequest(src, bytes, target);
    v1::MemcpyDtoH* copy = request.mutable_memcpy_dtoh();
    copy->set_size(bytes);
    copy->mutable_destination()->set_segment(shared->segment);
    copy->mutable_destination()->set_offset(shared->offset);
    copy->mutable_destination()->set_size(bytes);
    return sendCopy(request, target, surelyDeviceRange(src, bytes));
  }
  auto* bytesOut = static_cast<char*>(dst);
  if (std::unique_ptr<StagedCalls> staged = Connection::instance().stage();
      staged != nullptr && staged->chunkCount() > 0) {
    return stagedDeviceToHost(*staged, bytesOut, src, bytes, target);
  }
  std::uint64_t offset = 0;
  do {
    const std::uint64_t chunk = std::min(kCopyChunkBytes, bytes - offset);
    v1::CallRequest request = deviceToHostRequest(src, bytes, target);
    request.mutable_memcpy_dtoh()->set_offset(offset);
    request.mutable_memcpy_dtoh()->set_size(chunk);
    v1::CallReply reply;
    if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
    if (reply.host_data().data().size() != chunk) return cudaErrorUnknown;  // a broken reply
    std::memcpy(bytesOut + offset, reply.host_data().data().data(), chunk);
    offset += chunk;
  } while (offset < bytes);
  return cudaSuccess;
}

static cudaError_t copyDeviceToDeviceNow(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                                         CopyTarget target) {
  noteStreamWork(target);
  v1::CallRequest request;
  v1::MemcpyDtoD* copy = request.mutable_memcpy_dtod();
  copy->set_dst(dst);
  copy->set_src(src);
  copy->set_size(bytes);
  copy->set_stream(target.stream);
  copy->set_async(target.async);
  if (target.returnsEarly && surelyDeviceRange(dst, bytes) && surelyDeviceRange(src, bytes)) {
    return invokeAsync(request);
  }
  v1::CallReply reply;
  return invoke(request, &reply);
}

// Waits until the device has passed the work ordered before a copy or fill on `target` that the
// host does itself (managed memory is host memory: host_allocations.h): a synchronous one waits for
// the whole device, as the legacy stream orders it after every blocking stream; an async one for
// its stream.
static cudaError_t waitBeforeHostAccess(const CopyTarget& target) {
  v1::CallRequest request;
  if (target.async) {
    request.mutable_stream_synchronize()->set_stream(target.stream);
  } else {
    request.mutable_device_synchronize();
  }
  v1::CallReply reply;
  return invoke(request, &reply);
}

static cudaError_t fillDeviceNow(std::uint64_t dst, int value, std::uint64_t bytes, CopyTarget target) {
  // A fill of managed memory, or of page-locked or registered memory named by its device address
  // (which under unified addressing CUDA allows), is one of host memory shared with the worker
  // (see copyByKindNow): done here, in order, at the program's address of those bytes.
  // (Device memory the client knows is not looked up there: a memset of it is the common case.)
  const bool surelyDevice = surelyDeviceRange(dst, bytes);
  if (std::optional<void*> host =
          surelyDevice ? std::nullopt : HostAllocations::instance().hostAddressOfDeviceRange(dst, bytes)) {
    if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
    if (cudaError_t error = waitBeforeHostAccess(target); error != cudaSuccess) return error;
    std::memset(*host, value, bytes);
    return cudaSuccess;
  }
  // A memset of device memory, even cudaMemset, is asynchronous with respect to the host in
  // CUDA, so one on a range the client knows to be its own goes out without waiting.
  noteWorkPosted(target.stream);
  v1::CallRequest request;
  v1::Memset* memset = request.mutable_memset();
  memset->set_dst(dst);
  memset->set_value(static_cast<std::uint32_t>(value) & 0xffu);
  memset->set_size(bytes);
  memset->set_stream(target.stream);
  memset->set_async(target.async);
  if (surelyDevice) return invokeAsync(request);
  v1::CallReply reply;
  return invoke(request, &reply);
}

bool isDeviceAddress(const void* p) {
  const auto address = reinterpret_cast<std::uint64_t>(p);
  cudaError_t error = cudaSuccess;
  const v1::DeviceInfo* info = deviceInfo(&error);
  if (info != nullptr && address >= info->user_range_begin() && address < info->user_range_end()) return true;
  return ModuleRegistry::instance().isDeviceVariableAddress(address);
}

static cudaError_t copyByKindNow(void* dst, const void* src, std::uint64_t bytes, cudaMemcpyKind kind,
                                 CopyTarget target) {
  if (kind == cudaMemcpyDefault) {
    const bool dstDevice = isDeviceAddress(dst);
    const bool srcDevice = isDeviceAddress(src);
    kind = dstDevice ? (srcDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                     : (srcDevice ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  if (bytes == 0) return cudaSuccess;
  // Managed memory may be named as either side's memory, as natively; here it is host memory
  // shared with the worker, so a side that is managed is the host's (a copy to or from device
  // memory then names its segment: sharedRange). A copy with no device side left is done here,
  // after the device has passed the work ordered before it.
  const HostAllocations& host = HostAllocations::instance();
  const bool dstManaged = host.isManaged(dst, bytes);
  const bool srcManaged = host.isManaged(src, bytes);
  if (dstManaged || srcManaged) {
    const bool dstHost = dstManaged || kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost;
    const bool srcHost = srcManaged || kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice;
    kind = dstHost ? (srcHost ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
                   : (srcHost ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice);
    if (kind == cudaMemcpyHostToHost) {
      if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
      if (cudaError_t error = waitBeforeHostAccess(target); error != cudaSuccess) return error;
    }
  }
  const auto dstAddress = reinterpret_cast<std::uint64_t>(dst);
  const auto srcAddress = reinterpret_cast<std::uint64_t>(src);
  switch (kind) {
    case cudaMemcpyHostToHost:
      if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
      std::memmove(dst, src, bytes);
      return cudaSuccess;
    case cudaMemcpyHostToDevice:
      if (src == nullptr) return cudaErrorInvalidValue;
      return copyHostToDeviceNow(dstAddress, src, bytes, target);
    case cudaMemcpyDeviceToHost:
      if (dst == nullptr) return cudaErrorInvalidValue;
      return copyDeviceToHostNow(dst, srcAddress, bytes, target);
    case cudaMemcpyDeviceToDevice:
      return copyDeviceToDeviceNow(dstAddress, srcAddress, bytes, target);
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

static cudaError_t copyRowsNow(void* dst, std::uint64_t dpitch, const void* src, std::uint64_t spitch,
                               std::uint64_t width, std::uint64_t height, cudaMemcpyKind kind,
                               CopyTarget target) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (dpitch == width && spitch == width) {
    if (height > UINT64_MAX / width) return cudaErrorInvalidValue;
    return copyByKindNow(dst, src, width * height, kind, target);
  }
  for (std::uint64_t row = 0; row < height; ++row) {
    void* dstRow = static_cast<char*>(dst) + row * dpitch;
    const void* srcRow = static_cast<const char*>(src) + row * spitch;
    if (cudaError_t error = copyByKindNow(dstRow, srcRow, width, kind, target); error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

static cudaError_t fillRowsNow(std::uint64_t dst, std::uint64_t pitch, int value, std::uint64_t width,
                               std::uint64_t height, CopyTarget target) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (pitch == width) {
    if (height > UINT64_MAX / width) return cudaErrorInvalidValue;
    return fillDeviceNow(dst, value, width * height, target);
  }
  for (std::uint64_t row = 0; row < height; ++row) {
    if (cudaError_t error = fillDeviceNow(dst + row * pitch, value, width, target); error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

// While the target stream captures (stream_capture.h), an *Async copy or memset becomes a node of
// the capture; a synchronous one on a capturing stream is refused. nullopt: send it now.
static std::optional<cudaError_t> captured(const CopyTarget& target, NodeKind kind, NodeWork work) {
  if (!target.async || !anyCapture()) return std::nullopt;
  if (!target.returnsEarly) return refusedInCapture(target.stream);
  return capturedWork(target.stream, kind, std::move(work));
}

static std::optional<cudaError_t> capturedCopy(void* dst, std::uint64_t dpitch, const void* src,
                                               std::uint64_t spitch, std::uint64_t width,
                                               std::uint64_t height, cudaMemcpyKind kind,
                                               const CopyTarget& target) {
  return captured(target, NodeKind::kMemcpy, CopyWork{dst, dpitch, src, spitch, width, height, kind});
}

static std::optional<cudaError_t> capturedFill(std::uint64_t dst, std::uint64_t pitch, int value,
                                               std::uint64_t width, std::uint64_t height,
                                               const CopyTarget& target) {
  return captured(target, NodeKind::kMemset,
                  FillWork{dst, pitch, static_cast<unsigned>(value) & 0xffu, 1, width, height});
}

cudaError_t copyHostToDevice(std::uint64_t dst, const void* src, std::uint64_t bytes, CopyTarget target) {
  if (auto node = capturedCopy(reinterpret_cast<void*>(dst), bytes, src, bytes, bytes, 1,
                               cudaMemcpyHostToDevice, target)) {
    return *node;
  }
  return copyHostToDeviceNow(dst, src, bytes, target);
}

cudaError_t copyDeviceToHost(void* dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target) {
  if (auto node = capturedCopy(dst, bytes, reinterpret_cast<const void*>(src), bytes, bytes, 1,
                               cudaMemcpyDeviceToHost, target)) {
    return *node;
  }
  return copyDeviceToHostNow(dst, src, bytes, target);
}

cudaError_t copyDeviceToDevice(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target) {
  if (auto node = capturedCopy(reinterpret_cast<void*>(dst), bytes, reinterpret_cast<const void*>(src), bytes,
                               bytes, 1, cudaMemcpyDeviceToDevice, target)) {
    return *node;
  }
  return copyDeviceToDeviceNow(dst, src, bytes, target);
}

cudaError_t fillDevice(std::uint64_t dst, int value, std::uint64_t bytes, CopyTarget target) {
  if (auto node = capturedFill(dst, bytes, value, bytes, 1, target)) return *node;
  return fillDeviceNow(dst, value, bytes, target);
}

cudaError_t copyByKind(void* dst, const void* src, std::uint64_t bytes, cudaMemcpyKind kind,
                       CopyTarget target) {
  if (bytes == 0) return cudaSuccess;
  if (auto node = capturedCopy(dst, bytes, src, bytes, bytes, 1, kind, target)) return *node;
  return copyByKindNow(dst, src, bytes, kind, target);
}

cudaError_t copyRows(void* dst, std::uint64_t dpitch, const void* src, std::uint64_t spitch,
                     std::uint64_t width, std::uint64_t height, cudaMemcpyKind kind, CopyTarget target) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (auto node = capturedCopy(dst, dpitch, src, spitch, width, height, kind, target)) return *node;
  return copyRowsNow(dst, dpitch, src, spitch, width, height, kind, target);
}

cudaError_t fillRows(std::uint64_t dst, std::uint64_t pitch, int value, std::uint64_t width,
                     std::uint64_t height, CopyTarget target) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (auto node = capturedFill(dst, pitch, value, width, height, target)) return *node;
  return fillRowsNow(dst, pitch, value, width, height, target);
}

}  // namespace agileos::client
