#include "worker/transport/shm_connection.h"

#include <google/protobuf/arena.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <thread>

#include "proto/shm/fd_passing.h"
#include "proto/shm/handshake.h"
#include "worker/launch_batch.h"
#include "worker/transport/shm_worker_channel.h"

namespace agileos::worker {
namespace {

// The connection's staging area, registered with the GPU for as long as the connection is
// served, so copies through it are direct DMA. Staging copies finish before their reply
// (memory_handlers.cpp), so nothing is in flight when it is unregistered.
class StagingRegistration {
 public:
  StagingRegistration(GpuBackend& gpu, std::uint8_t* base, std::uint64_t bytes) : gpu_(gpu), base_(base) {
    if (bytes == 0) return;
    const CUresult result = gpu.hostRegister(base, bytes);
    registered_ = result == CUDA_SUCCESS;
    // Still usable unregistered: the driver then stages through its own buffers.
    if (!registered_)
      spdlog::warn("shm transport: staging area not registered with the GPU ({})", int(result));
  }
  ~StagingRegistration() {
    if (registered_) gpu_.hostUnregister(base_);
  }
  StagingRegistration(const StagingRegistration&) = delete;
  StagingRegistration& operator=(const StagingRegistration&) = delete;

 private:
  GpuBackend& gpu_;
  std::uint8_t* base_;
  bool registered_ = false;
};

// What calls sent without waiting (shm::kNoReply) leave for the next reply: the first
// error, and device printf output, which the client prints when a reply brings it.
struct DeferredOutcome {
  int error = 0;
  std::string detail;
  std::string deviceOutput;

  void absorbHeldLaunchFailure(SharedMemoryChannel& shared) {
    if (shared.heldLaunchError != 0 && error == 0) {
      error = shared.heldLaunchError;
      detail = std::move(shared.heldLaunchDetail);
    }
    shared.heldLaunchError = 0;
    shared.heldLaunchDetail.clear();
  }
  void absorb(v1::CallReply& reply) {
    if (reply.error() != 0 && error == 0) {
      error = reply.error();
      detail = reply.error_detail();
    }
    if (!reply.device_output().empty()) deviceOutput += reply.device_output();
  }
  void attachTo(v1::CallReply& reply) {
    if (error != 0) {
      reply.set_deferred_error(error);
      reply.set_deferred_error_detail(std::move(detail));
    }
    if (!deviceOutput.empty()) reply.set_device_output(deviceOutput + reply.device_output());
    *this = {};
  }
};

}  // namespace

std::string serveShmConnection(WorkerRuntime& runtime, const shm::MappedRegion& region, int socketFd,
                               const std::string& sessionToken, const shm::WaitPolicy& policy,
                               const std::atomic<bool>& stop) {
  ShmWorkerChannel channel(region);
  const std::optional<WorkerRuntime::Binding> binding = runtime.bind(sessionToken);
  shm::ControlBlock& control = region.control();
  const shm::RegionGeometry& geometry = region.geometry();
  SharedMemoryChannel shared;
  shared.staging = region.base() + geometry.stagingOffset;
  shared.stagingBytes = geometry.stagingBytes;
  StagingRegistration registration(runtime.gpu(), shared.staging, shared.stagingBytes);
  DeferredOutcome deferred;
  LaunchBatch heldLaunches;
  shared.launches = runtime.launchChains() ? &heldLaunches : nullptr;
  shared.loneLaunchChains = runtime.launchChains() && runtime.loneLaunchChains();
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
  // Requests are parsed into an arena whose first block is reused for every call, so a
  // steady stream of small calls (launches) allocates nothing; the reply is reused too.
  std::vector<char> arenaBlock(64 << 10);
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.initial_block = arenaBlock.data();
  arenaOptions.initial_block_size = arenaBlock.size();
  google::protobuf::Arena arena(arenaOptions);
  v1::CallReply reply;
  for (;;) {
    if (shm::waitFor(
            control.requestBell, policy, [&] { return channel.requestIndexMoved() || stop.load(); },
            keepWaiting) == shm::WaitOutcome::kGaveUp) {
      return endReason;
    }
    if (stop.load()) return "worker shutting down";
    std::uint64_t callId = 0;
    bool noReply = false;
    const ShmWorkerChannel::Take taken = channel.takeRequest(&callId, &message, &noReply);
    if (taken == ShmWorkerChannel::Take::kViolation) return "protocol violation: " + channel.violation();
    if (taken == ShmWorkerChannel::Take::kEmpty) continue;

    arena.Reset();
    v1::CallRequest& request = *google::protobuf::Arena::CreateMessage<v1::CallRequest>(&arena);
    if (!request.ParseFromString(message)) return "protocol violation: unparsable request";
    reply.Clear();
    shared.fdsToSend.clear();
    shared.replyAwaited = !noReply;
    shared.unawaitedQueued = channel.unawaitedRequestQueued();
    const bool authenticated =
        binding && runtime.call(*binding, request, reply, &shared) == WorkerRuntime::CallStatus::kOk;
    // A failure of launches held earlier comes before this call's own.
    deferred.absorbHeldLaunchFailure(shared);
    if (authenticated && noReply) {
      for (int fd : shared.fdsToSend) ::close(fd);  // nobody is waiting for them
      deferred.absorb(reply);
      continue;
    }
    for (int fd : shared.fdsToSend) {
      std::string error;
      const bool sent = shm::sendFd(socketFd, shm::kSegmentFdTag, fd, &error);
      ::close(fd);
      if (!sent) return "cannot pass a file descriptor: " + error;
    }
    if (authenticated) deferred.attachTo(reply);
    const shm::CompletionStatus status =
        authenticated ? shm::CompletionStatus::kOk : shm::CompletionStatus::kRejected;
    for (;;) {
      const ShmWorkerChannel::Put put =
          channel.putCompletion(callId, status, authenticated ? &reply : nullptr);
      if (put == ShmWorkerChannel::Put::kDone) break;
      if (put == ShmWorkerChannel::Put::kViolation) return "protocol violation: " + channel.violation();
      // kFull: the client has not consumed earlier completions yet. Poll gently.
      if (!keepWaiting()) return endReason;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (!authenticated) return "session token no longer attached";
  }
}

}  // namespace agileos::worker
