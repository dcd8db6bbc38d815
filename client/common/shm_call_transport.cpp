#include "client/common/shm_call_transport.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "client/common/log.h"
#include "client/common/reply_trace.h"
#include "proto/shm/fd_passing.h"
#include "proto/shm/handshake.h"
#include "proto/shm/ring_index.h"

namespace agileos::client {

using shm::CompletionStatus;
using shm::SlotHeader;
using shm::SlotKind;

namespace {
constexpr std::chrono::milliseconds kHandshakeTimeout{5000};
// How long the worker may take between a HostAlloc reply and the fd that precedes it on
// the socket (it is sent first, so it is normally there already).
constexpr std::chrono::milliseconds kFdTimeout{5000};
constexpr std::uint64_t kPage = 4096;
}  // namespace

// ------------------------------------------------------------------ staged calls

class ShmCallTransport::Staged final : public StagedCalls {
 public:
  explicit Staged(ShmCallTransport& transport) : transport_(transport), lock_(transport.mutex_) {
    chunkBytes_ = transport.geometry_.stagingBytes / kStagingChunks / kPage * kPage;
  }
  ~Staged() override {
    // A caller that stopped early leaves replies due: collect them so that the next call
    // gets its own reply. Their deferred errors, if any, are lost with them.
    v1::CallReply discarded;
    while (outstanding_ > 0 && transport_.awaitReply(&discarded) == TransportStatus::kOk) --outstanding_;
  }
  std::uint32_t chunkCount() const override { return chunkBytes_ == 0 ? 0 : kStagingChunks; }
  std::uint64_t chunkBytes() const override { return chunkBytes_; }
  std::uint8_t* chunk(std::uint32_t index) override {
    return transport_.region_->base() + transport_.geometry_.stagingOffset +
           std::uint64_t{index} * chunkBytes_;
  }
  void describeChunk(std::uint32_t index, std::uint64_t size, v1::HostBuffer* buffer) const override {
    buffer->set_segment(0);
    buffer->set_offset(std::uint64_t{index} * chunkBytes_);
    buffer->set_size(size);
  }
  TransportStatus submit(const v1::CallRequest& request) override {
    if (transport_.broken_) return transport_.brokenStatus_;
    const std::size_t size = request.ByteSizeLong();
    if (!transport_.fitsArena(size)) return transport_.broken("a staged request exceeds the request arena");
    if (!transport_.post(request, size, false)) return transport_.brokenStatus_;
    ++outstanding_;
    return TransportStatus::kOk;
  }
  TransportStatus next(v1::CallReply* reply) override {
    if (outstanding_ == 0) return transport_.broken("no staged call awaits a reply");
    const TransportStatus status = transport_.awaitReply(reply);
    if (status == TransportStatus::kOk) --outstanding_;
    return status;
  }

 private:
  ShmCallTransport& transport_;
  std::unique_lock<std::mutex> lock_;
  std::uint64_t chunkBytes_ = 0;
  std::uint32_t outstanding_ = 0;
};

// ------------------------------------------------------------------ setup

shm::WaitPolicy ShmCallTransport::waitPolicyFromEnvironment() {
  shm::WaitPolicy policy;
  policy.spin = shm::WaitPolicy::kClientSpin;
  if (const char* text = std::getenv("AGILEOS_SHM_SPIN_US"); text != nullptr) {
    unsigned value = 0;
    const std::string_view view(text);
    auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (ec == std::errc() && end == view.data() + view.size() && value <= 1000000) {
      policy.spin = std::chrono::microseconds(value);
    } else {
      AGILEOS_LOG_WARN("ignoring AGILEOS_SHM_SPIN_US=%s (want microseconds, at most 1000000)", text);
    }
  }
  return policy;
}

std::unique_ptr<ShmCallTransport> ShmCallTransport::connect(const std::string& socketPath,
                                                            const std::string& sessionToken,
                                                            const shm::WaitPolicy& policy,
                                                            std::unique_ptr<CallTransport> oversized,
                                                            std::string* error) {
  int socketFd = -1;
  int regionFd = -1;
  if (!shm::clientHandshake(socketPath, sessionToken, kHandshakeTimeout, &socketFd, &regionFd, error)) {
    return nullptr;
  }
  std::unique_ptr<shm::MappedRegion> region = shm::MappedRegion::attach(regionFd, error);
  if (!region) {
    ::close(socketFd);
    return nullptr;
  }
  return std::unique_ptr<ShmCallTransport>(
      new ShmCallTransport(socketFd, std::move(region), policy, std::move(oversized)));
}

ShmCallTransport::ShmCallTransport(int socketFd, std::unique_ptr<shm::MappedRegion> region,
                                   const shm::WaitPolicy& policy, std::unique_ptr<CallTransport> oversized)
    : socketFd_(socketFd),
      region_(std::move(region)),
      geometry_(region_->geometry()),
      policy_(policy),
      oversized_(std::move(oversized)) {}

ShmCallTransport::~ShmCallTransport() { ::close(socketFd_); }

TransportStatus ShmCallTransport::broken(const std::string& why) {
  AGILEOS_LOG_ERROR("shared-memory transport: %s", why.c_str());
  broken_ = true;
  return brokenStatus_;
}

bool ShmCallTransport::fitsArena(std::size_t size) const { return size <= geometry_.requestArenaBytes; }

// ------------------------------------------------------------------ calls

TransportStatus ShmCallTransport::call(const v1::CallRequest& request, v1::CallReply* reply) {
  const std::size_t size = request.ByteSizeLong();
  if (!fitsArena(size)) {
    if (oversized_) return oversized_->call(request, reply);
    AGILEOS_LOG_ERROR("a request of %zu bytes exceeds the shared-memory arena and no fallback exists", size);
    return TransportStatus::kUnavailable;
  }
  std::lock_guard lock(mutex_);
  if (broken_) return brokenStatus_;
  if (!post(request, size, false)) return brokenStatus_;
  return awaitReply(reply);
}

TransportStatus ShmCallTransport::send(const v1::CallRequest& request, v1::CallReply* reply, bool* replied) {
  const std::size_t size = request.ByteSizeLong();
  if (!fitsArena(size)) {
    *replied = true;
    return call(request, reply);
  }
  *replied = false;
  std::lock_guard lock(mutex_);
  if (broken_) return brokenStatus_;
  return post(request, size, true) ? TransportStatus::kOk : brokenStatus_;
}

std::unique_ptr<StagedCalls> ShmCallTransport::stage() { return std::make_unique<Staged>(*this); }

TransportStatus ShmCallTransport::allocateShared(const v1::CallRequest& request, v1::CallReply* reply,
                                                 void** mapping, bool atDeviceAddress) {
  *mapping = nullptr;
  std::lock_guard lock(mutex_);
  if (broken_) return brokenStatus_;
  if (!post(request, request.ByteSizeLong(), false)) return brokenStatus_;
  if (TransportStatus status = awaitReply(reply); status != TransportStatus::kOk) return status;
  if (reply->error() != 0) return TransportStatus::kOk;
  const std::uint64_t size = reply->host_segment().size();
  char tag = 0;
  int fd = -1;
  std::string error;
  if (!shm::receiveFd(socketFd_, kFdTimeout, &tag, &fd, &error)) return broken("host segment: " + error);
  struct stat st {};
  if (tag != shm::kSegmentFdTag || size == 0 || size % kPage != 0 || ::fstat(fd, &st) != 0 ||
      static_cast<std::uint64_t>(st.st_size) != size) {
    ::close(fd);
    return broken("host segment: the worker passed an fd that does not match its reply");
  }
  // The worker's address is untrusted here as everywhere: MAP_FIXED_NOREPLACE never replaces a
  // mapping of this process, and a kernel that takes it as a hint (before 4.17) placing the
  // segment elsewhere counts as a failure.
  const std::uint64_t at = atDeviceAddress ? reply->host_segment().device_address() : 0;
  if (atDeviceAddress && (at == 0 || at % kPage != 0)) {
    ::close(fd);
    reply->set_error(2);  // cudaErrorMemoryAllocation; the caller frees the segment by name
    reply->set_error_detail("the worker gave no page-aligned address for the segment");
    return TransportStatus::kOk;
  }
  void* p = ::mmap(reinterpret_cast<void*>(at), size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE | (atDeviceAddress ? MAP_FIXED_NOREPLACE : 0), fd, 0);
  ::close(fd);
  if (p != MAP_FAILED && atDeviceAddress && reinterpret_cast<std::uint64_t>(p) != at) {
    ::munmap(p, size);
    p = MAP_FAILED;
    errno = EEXIST;
  }
  if (p == MAP_FAILED) {
    // The worker holds the segment; the caller frees it by name.
    reply->set_error(2);  // cudaErrorMemoryAllocation
    reply->set_error_detail(std::string("mmap of the host segment: ") + std::strerror(errno));
    return TransportStatus::kOk;
  }
  *mapping = p;
  return TransportStatus::kOk;
}

// ------------------------------------------------------------------ ring mechanics

bool ShmCallTransport::waitForRequestSpace(bool needArena) {
  // The worker's consume index only grows, so a space this side already saw is still there:
  // re-reading the shared counter (a cache line the worker keeps writing) is needed only when
  // the last value seen leaves no room.
  if (!needArena && requestProduced_ - lastRequestConsumed_ < geometry_.slotCount) return true;
  using Clock = std::chrono::steady_clock;
  shm::ControlBlock& control = region_->control();
  Clock::time_point nextPeerCheck = Clock::now() + policy_.sleepSlice;
  for (std::uint32_t round = 0;; ++round) {
    const std::uint64_t consumed = control.requestConsumed.value.load(std::memory_order_acquire);
    const shm::IndexCheck space =
        shm::slotsFreeToProduce(consumed, lastRequestConsumed_, requestProduced_, geometry_.slotCount);
    if (space.verdict != shm::IndexVerdict::kOk) {
      broken(std::string("request ring: ") + shm::toString(space.verdict));
      return false;
    }
    lastRequestConsumed_ = consumed;
    // The arena holds one message: it is free once the worker has taken every request.
    if (space.count > 0 && (!needArena || consumed == requestProduced_)) return true;
    // The worker does not ring for consumption: poll. A full ring holds hundreds of calls
    // of work for the worker, so this side sleeps at once rather than spin on a core the
    // worker may share; a wait for the arena (a few calls) spins briefly first.
    if (space.count > 0 && round < 2000) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (Clock::now() >= nextPeerCheck) {
      if (shm::peerGone(socketFd_)) {
        broken("the worker closed the connection");
        return false;
      }
      nextPeerCheck = Clock::now() + policy_.sleepSlice;
    }
  }
}

bool ShmCallTransport::post(const v1::CallRequest& request, std::size_t size, bool noReply) {
  const bool inlined = size <= shm::slotPayloadBytes(geometry_);
  if (!inlined && size > geometry_.requestArenaBytes) {
    broken("a request of " + std::to_string(size) + " bytes exceeds the request arena");
    return false;
  }
  if (!waitForRequestSpace(!inlined)) return false;
  std::uint8_t* base = region_->base();
  std::uint8_t* slot = base + shm::slotOffset(geometry_.requestRingOffset, requestProduced_, geometry_);
  SlotHeader header{};
  header.callId = nextCallId_++;
  header.status = noReply ? std::uint32_t{shm::kNoReply} : 0u;
  if (inlined) {
    header.kind = static_cast<std::uint32_t>(SlotKind::kInline);
    header.inlineBytes = static_cast<std::uint32_t>(size);
    request.SerializeWithCachedSizesToArray(slot + sizeof header);
  } else {
    header.kind = static_cast<std::uint32_t>(SlotKind::kArena);
    header.arenaOffset = 0;
    header.arenaBytes = size;
    request.SerializeWithCachedSizesToArray(base + geometry_.requestArenaOffset);
  }
  std::memcpy(slot, &header, sizeof header);
  if (!noReply) awaiting_.push_back(header.callId);
  ++requestProduced_;
  shm::ControlBlock& control = region_->control();
  control.requestProduced.value.store(requestProduced_, std::memory_order_seq_cst);
  shm::ring(control.requestBell);
  return true;
}

TransportStatus ShmCallTransport::awaitReply(v1::CallReply* reply) {
  if (broken_) return brokenStatus_;
  if (awaiting_.empty()) return broken("no call awaits a reply");
  shm::ControlBlock& control = region_->control();
  const auto outcome = shm::waitFor(
      control.completionBell, policy_,
      [&] { return control.completionProduced.value.load(std::memory_order_seq_cst) != completionConsumed_; },
      [&] { return !shm::peerGone(socketFd_); });
  if (outcome == shm::WaitOutcome::kGaveUp) return broken("the worker closed the connection");

  const std::uint64_t produced = control.completionProduced.value.load(std::memory_order_acquire);
  const shm::IndexCheck check =
      shm::entriesToConsume(produced, lastCompletionProduced_, completionConsumed_, geometry_.slotCount);
  if (check.verdict != shm::IndexVerdict::kOk || check.count == 0) {
    return broken(std::string("completion ring: ") + shm::toString(check.verdict));
  }
  lastCompletionProduced_ = produced;
  const std::uint8_t* base = region_->base();
  const std::uint8_t* slot =
      base + shm::slotOffset(geometry_.completionRingOffset, completionConsumed_, geometry_);
  SlotHeader header;
  std::memcpy(&header, slot, sizeof header);
  switch (static_cast<CompletionStatus>(header.status)) {
    case CompletionStatus::kOk:
      break;
    case CompletionStatus::kRejected:
      brokenStatus_ = TransportStatus::kRejected;
      return broken("the worker refused the session token");
    case CompletionStatus::kReplyTooLarge:
      return broken("the reply exceeded the reply arena");
    default:
      return broken("a completion of unknown status");
  }
  if (header.callId != awaiting_.front()) return broken("a completion for another call");
  bool parsed = false;
  if (header.kind == static_cast<std::uint32_t>(SlotKind::kInline) &&
      header.inlineBytes <= shm::slotPayloadBytes(geometry_)) {
    parsed = reply->ParseFromArray(slot + sizeof header, static_cast<int>(header.inlineBytes));
  } else if (header.kind == static_cast<std::uint32_t>(SlotKind::kArena) &&
             shm::rangeWithin(header.arenaOffset, header.arenaBytes, geometry_.replyArenaBytes) &&
             header.arenaBytes <= static_cast<std::uint64_t>(INT32_MAX)) {
    parsed = reply->ParseFromArray(base + geometry_.replyArenaOffset + header.arenaOffset,
                                   static_cast<int>(header.arenaBytes));
  }
  if (!parsed) return broken("an unreadable reply");
  traceReply(*reply);
  awaiting_.pop_front();
  ++completionConsumed_;
  control.completionConsumed.value.store(completionConsumed_, std::memory_order_release);
  return TransportStatus::kOk;
}

}  // namespace agileos::client
