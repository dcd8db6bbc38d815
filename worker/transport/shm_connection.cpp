#include "worker/transport/shm_connection.h"

#include <thread>

#include "proto/shm/handshake.h"
#include "worker/transport/shm_worker_channel.h"

namespace agileos::worker {

std::string serveShmConnection(WorkerRuntime& runtime, const shm::MappedRegion& region, int socketFd,
                               const std::string& sessionToken, const shm::WaitPolicy& policy,
                               const std::atomic<bool>& stop) {
  ShmWorkerChannel channel(region);
  shm::ControlBlock& control = region.control();
  std::string endReason;
  auto keepWaiting = [&] {
    if (stop.load()) {
      endReason = "worker shutting down";
      return false;
    }
    if (shm::peerGone(socketFd)) {
      endReason = "client closed its socket";
      return false;
    }
    return true;
  };
  std::string message;
  for (;;) {
    if (shm::waitFor(control.requestBell, policy, [&] { return channel.requestIndexMoved() || stop.load(); },
                     keepWaiting) == shm::WaitOutcome::kGaveUp) {
      return endReason;
    }
    if (stop.load()) return "worker shutting down";
    std::uint64_t callId = 0;
    const ShmWorkerChannel::Take taken = channel.takeRequest(&callId, &message);
    if (taken == ShmWorkerChannel::Take::kViolation) return "protocol violation: " + channel.violation();
    if (taken == ShmWorkerChannel::Take::kEmpty) continue;

    v1::CallRequest request;
    if (!request.ParseFromString(message)) return "protocol violation: unparsable request";
    v1::CallReply reply;
    const bool authenticated = runtime.call(sessionToken, request, reply) == WorkerRuntime::CallStatus::kOk;
    const shm::CompletionStatus status =
        authenticated ? shm::CompletionStatus::kOk : shm::CompletionStatus::kRejected;
    for (;;) {
      const ShmWorkerChannel::Put put = channel.putCompletion(callId, status, authenticated ? &reply : nullptr);
      if (put == ShmWorkerChannel::Put::kDone) break;
      if (put == ShmWorkerChannel::Put::kViolation) return "protocol violation: " + channel.violation();
      // kFull: the client has not consumed earlier completions yet. Poll gently.
      if (!keepWaiting()) return endReason;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!authenticated) return "session token no longer attached";
  }
}

}  // namespace agileos::worker
