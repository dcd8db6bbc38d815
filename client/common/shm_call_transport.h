// ShmCallTransport: CallTransport over a shared-memory region shared with the worker
// (proto/shm/ring_layout.h), for a client on the worker's host. Chosen by
// default for clients on the worker's host (client/common/connection.cpp); AGILEOS_TRANSPORT=grpc
// forces gRPC.
//
// connect() performs the handshake (proto/shm/handshake.h) with the session token and
// maps the region the worker passes back. Each call serializes the CallRequest straight
// into a request slot (or the request arena if it does not fit), rings the worker's
// doorbell, and waits for the matching completion: it spins for the policy's spin time,
// then sleeps on the completion doorbell, checking every sleep slice whether the
// worker's end of the socket has closed (then kUnavailable, for good).
//
// The worker's writes are trusted to be the worker's, but never to be sane: every index,
// length and offset read from the region is bounds-checked, and garbage ends the transport
// (kUnavailable), never the process.
//
// Thread-safety: call() may be used from several threads; calls are serialized by a
// mutex (one call in flight per connection; the asynchronous step will lift this).
// Not fork-safe: a child must not use its parent's transport.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "client/common/call_transport.h"
#include "proto/shm/doorbell.h"
#include "proto/shm/mapped_region.h"

namespace agileos::client {

class ShmCallTransport final : public CallTransport {
 public:
  // Spin time from AGILEOS_SHM_SPIN_US (default 30 us).
  static shm::WaitPolicy waitPolicyFromEnvironment();

  // Returns null with *error set if the worker cannot be reached, refuses the token, or
  // passes something that is not a region.
  static std::unique_ptr<ShmCallTransport> connect(const std::string& socketPath, const std::string& sessionToken,
                                                   const shm::WaitPolicy& policy, std::string* error);
  ~ShmCallTransport() override;  // closes the socket: the worker ends the connection

  TransportStatus call(const v1::CallRequest& request, v1::CallReply* reply) override;

 private:
  ShmCallTransport(int socketFd, std::unique_ptr<shm::MappedRegion> region, const shm::WaitPolicy& policy);
  bool sendRequest(const v1::CallRequest& request);
  TransportStatus receiveReply(v1::CallReply* reply);
  TransportStatus broken(const std::string& why);

  std::mutex mutex_;
  const int socketFd_;
  const std::unique_ptr<shm::MappedRegion> region_;
  const shm::RegionGeometry geometry_;  // validated private copy
  const shm::WaitPolicy policy_;
  // Guarded by mutex_:
  std::uint64_t nextCallId_ = 1;
  std::uint64_t requestProduced_ = 0;
  std::uint64_t lastRequestConsumed_ = 0;
  std::uint64_t completionConsumed_ = 0;
  std::uint64_t lastCompletionProduced_ = 0;
  bool broken_ = false;
  TransportStatus brokenStatus_ = TransportStatus::kUnavailable;
};

}  // namespace agileos::client
