// serveShmConnection: the loop that serves one client's shared-memory connection,
// feeding WorkerRuntime exactly as GrpcCallServer does.
//
// It waits for a request (spin, then futex: proto/shm/doorbell.h), takes it off the
// ring (ShmWorkerChannel: private copy, bounds checks), parses it, runs it through
// WorkerRuntime::call with the token the handshake authenticated, and puts the reply
// on the completion ring. It returns, with the reason, when:
//   - the client's socket closes (the client exited or crashed),
//   - `stop` becomes true (worker shutdown),
//   - the token is no longer attached (the session was released; the client gets kRejected),
//   - the client breaks the protocol (bad index, bad length, unparsable request).
// The caller owns the region and the socket and closes them afterwards.
#pragma once

#include <atomic>
#include <string>

#include "proto/shm/doorbell.h"
#include "proto/shm/mapped_region.h"
#include "worker/worker_runtime.h"

namespace agileos::worker {

std::string serveShmConnection(WorkerRuntime& runtime, const shm::MappedRegion& region, int socketFd,
                               const std::string& sessionToken, const shm::WaitPolicy& policy,
                               const std::atomic<bool>& stop);

}  // namespace agileos::worker
