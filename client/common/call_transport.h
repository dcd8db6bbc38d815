// CallTransport: how the client's calls reach its worker (untrusted side).
//
// The schema is agileos.v1.CallRequest/CallReply whatever carries it, so a
// transport moves messages and decides nothing. Implementations: gRPC over a
// unix socket (grpc_call_transport.h) and a shared-memory region shared with the
// worker (shm_call_transport.h). Only the latter shares memory with the worker,
// which buys three things the base class declines by default:
//   - send(): a call nobody waits for (its error arrives as a later reply's
//     deferred_error), so launches and async copies cost no round trip;
//   - stage(): the connection's staging area, for pipelined bulk copies;
//   - allocateShared(): page-locked host memory the worker DMAs to directly.
//
// Thread-safety: every method may be used from several threads at once.
#pragma once

#include <cstdint>
#include <memory>

#include "agileos/v1/client_api.pb.h"

namespace agileos::client {

enum class TransportStatus {
  kOk,           // the reply is the worker's answer
  kUnavailable,  // the worker cannot be reached (it died or the session ended)
  kRejected,     // the worker refused the session token
};

// Exclusive use of the staging area for one bulk copy. While the object lives, no
// other call of the process uses the transport (calls from other threads wait), so
// the submitted calls run back to back. The area is cut into chunkCount() chunks;
// the caller reuses a chunk only after the reply of the call that used it.
class StagedCalls {
 public:
  virtual ~StagedCalls() = default;
  virtual std::uint32_t chunkCount() const = 0;
  virtual std::uint64_t chunkBytes() const = 0;
  virtual std::uint8_t* chunk(std::uint32_t index) = 0;
  // How the worker names [0, size) of chunk `index` (a HostBuffer in segment 0).
  virtual void describeChunk(std::uint32_t index, std::uint64_t size, v1::HostBuffer* buffer) const = 0;
  // Sends a call whose reply next() returns later; replies come in submission order.
  virtual TransportStatus submit(const v1::CallRequest& request) = 0;
  virtual TransportStatus next(v1::CallReply* reply) = 0;
};

class CallTransport {
 public:
  virtual ~CallTransport() = default;
  virtual TransportStatus call(const v1::CallRequest& request, v1::CallReply* reply) = 0;

  // Sends a call without waiting for its reply where the transport can (*replied =
  // false); otherwise makes the call and fills *reply (*replied = true).
  virtual TransportStatus send(const v1::CallRequest& request, v1::CallReply* reply, bool* replied) {
    *replied = true;
    return call(request, reply);
  }

  // Null when the transport has no staging area.
  virtual std::unique_ptr<StagedCalls> stage() { return nullptr; }

  // True if allocateShared() is available.
  virtual bool sharesHostMemory() const { return false; }
  // Makes `request` (a HostAlloc) and, when the reply succeeds, maps the segment the
  // worker passes: *mapping is its address in this process, reply->host_segment() its
  // name and size. kOk with an error in the reply when the worker refused.
  // `atDeviceAddress` (managed memory): the segment is mapped exactly at the reply's
  // device_address, never over anything this process has mapped (MAP_FIXED_NOREPLACE); when
  // that address is taken, kOk with cudaErrorMemoryAllocation in the reply and no mapping.
  virtual TransportStatus allocateShared(const v1::CallRequest& request, v1::CallReply* reply, void** mapping,
                                         bool atDeviceAddress) {
    (void)request;
    (void)reply;
    (void)atDeviceAddress;
    *mapping = nullptr;
    return TransportStatus::kUnavailable;
  }
};

}  // namespace agileos::client
