// ShmCallTransport: CallTransport over a shared-memory region shared with the worker
// (proto/shm/ring_layout.h), for a client on the worker's host. Chosen by default for
// clients on the worker's host (client/common/connection.cpp); AGILEOS_TRANSPORT=grpc
// forces gRPC.
//
// connect() performs the handshake (proto/shm/handshake.h) with the session token and
// maps the region the worker passes back. A call serializes the CallRequest straight
// into a request slot (or the request arena if it does not fit), rings the worker's
// doorbell, and waits for its completion: it spins for the policy's spin time, then
// sleeps on the completion doorbell, checking every sleep slice whether the worker's
// end of the socket has closed (then kUnavailable, for good).
//
// Several calls may be in flight: send() posts a call with kNoReply and returns at
// once; StagedCalls (stage()) submits several calls and collects their replies in
// order. The worker serves the ring in order, so calls keep the order they were
// posted in. A request larger than the request arena (a very large module image) goes
// over the gRPC fallback instead: same worker, same checks.
//
// The worker's writes are trusted to be the worker's, but never to be sane: every index,
// length and offset read from the region is bounds-checked, and garbage ends the transport
// (kUnavailable), never the process.
//
// Thread-safety: all methods may be used from several threads; one mutex orders the
// producers and the one consumer of replies. Not fork-safe: a child must not use its
// parent's transport.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "client/common/call_transport.h"
#include "proto/shm/doorbell.h"
#include "proto/shm/mapped_region.h"

namespace agileos::client {

class ShmCallTransport final : public CallTransport {
 public:
  // Spin time from AGILEOS_SHM_SPIN_US (default WaitPolicy::kClientSpin).
  static shm::WaitPolicy waitPolicyFromEnvironment();

  // Returns null with *error set if the worker cannot be reached, refuses the token, or
  // passes something that is not a region. `oversized` (may be null) carries requests too
  // large for the request arena.
  static std::unique_ptr<ShmCallTransport> connect(const std::string& socketPath,
                                                   const std::string& sessionToken,
                                                   const shm::WaitPolicy& policy,
                                                   std::unique_ptr<CallTransport> oversized,
                                                   std::string* error);
  ~ShmCallTransport() override;  // closes the socket: the worker ends the connection

  TransportStatus call(const v1::CallRequest& request, v1::CallReply* reply) override;
  TransportStatus send(const v1::CallRequest& request, v1::CallReply* reply, bool* replied) override;
  std::unique_ptr<StagedCalls> stage() override;
  bool sharesHostMemory() const override { return true; }
  TransportStatus allocateShared(const v1::CallRequest& request, v1::CallReply* reply, void** mapping,
                                 bool atDeviceAddress) override;

  // Chunks the staging area is cut into for StagedCalls.
  static constexpr std::uint32_t kStagingChunks = 8;

 private:
  class Staged;
  ShmCallTransport(int socketFd, std::unique_ptr<shm::MappedRegion> region, const shm::WaitPolicy& policy,
                   std::unique_ptr<CallTransport> oversized);
  bool fitsArena(std::size_t size) const;
  // Caller holds mutex_. Posts one request of `size` bytes, just computed by the caller
  // (ByteSizeLong, which also caches the sizes the serializer uses); a reply is expected
  // unless noReply.
  bool post(const v1::CallRequest& request, std::size_t size, bool noReply);
  // Caller holds mutex_. Waits for the reply of the oldest posted call that wants one.
  TransportStatus awaitReply(v1::CallReply* reply);
  bool waitForRequestSpace(bool needArena);
  TransportStatus broken(const std::string& why);

  std::mutex mutex_;
  const int socketFd_;
  const std::unique_ptr<shm::MappedRegion> region_;
  const shm::RegionGeometry geometry_;  // validated private copy
  const shm::WaitPolicy policy_;
  const std::unique_ptr<CallTransport> oversized_;
  // Guarded by mutex_:
  std::uint64_t nextCallId_ = 1;
  std::deque<std::uint64_t> awaiting_;  // call ids whose replies are due, oldest first
  std::uint64_t requestProduced_ = 0;
  std::uint64_t lastRequestConsumed_ = 0;
  std::uint64_t completionConsumed_ = 0;
  std::uint64_t lastCompletionProduced_ = 0;
  bool broken_ = false;
  TransportStatus brokenStatus_ = TransportStatus::kUnavailable;
};

}  // namespace agileos::client
