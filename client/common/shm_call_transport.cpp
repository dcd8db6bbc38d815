#include "client/common/shm_call_transport.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "client/common/log.h"
#include "proto/shm/handshake.h"
#include "proto/shm/ring_index.h"

namespace agileos::client {

using shm::CompletionStatus;
using shm::SlotHeader;
using shm::SlotKind;

namespace {
constexpr std::chrono::milliseconds kHandshakeTimeout{5000};
}  // namespace

shm::WaitPolicy ShmCallTransport::waitPolicyFromEnvironment() {
  shm::WaitPolicy policy;
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
                                                            const shm::WaitPolicy& policy, std::string* error) {
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
  return std::unique_ptr<ShmCallTransport>(new ShmCallTransport(socketFd, std::move(region), policy));
}

ShmCallTransport::ShmCallTransport(int socketFd, std::unique_ptr<shm::MappedRegion> region,
                                   const shm::WaitPolicy& policy)
    : socketFd_(socketFd), region_(std::move(region)), geometry_(region_->geometry()), policy_(policy) {}

ShmCallTransport::~ShmCallTransport() { ::close(socketFd_); }

TransportStatus ShmCallTransport::broken(const std::string& why) {
  AGILEOS_LOG_ERROR("shared-memory transport: %s", why.c_str());
  broken_ = true;
  return brokenStatus_;
}

TransportStatus ShmCallTransport::call(const v1::CallRequest& request, v1::CallReply* reply) {
  std::lock_guard lock(mutex_);
  if (broken_) return brokenStatus_;
  if (!sendRequest(request)) return brokenStatus_;
  return receiveReply(reply);
}

bool ShmCallTransport::sendRequest(const v1::CallRequest& request) {
  shm::ControlBlock& control = region_->control();
  const shm::IndexCheck space =
      shm::slotsFreeToProduce(control.requestConsumed.value.load(std::memory_order_acquire),
                              lastRequestConsumed_, requestProduced_, geometry_.slotCount);
  if (space.verdict != shm::IndexVerdict::kOk || space.count == 0) {
    broken(std::string("request ring: ") + shm::toString(space.verdict));
    return false;
  }
  std::uint8_t* base = region_->base();
  std::uint8_t* slot = base + shm::slotOffset(geometry_.requestRingOffset, requestProduced_, geometry_);
  SlotHeader header{};
  header.callId = nextCallId_;
  const std::size_t size = request.ByteSizeLong();
  if (size <= shm::slotPayloadBytes(geometry_)) {
    header.kind = static_cast<std::uint32_t>(SlotKind::kInline);
    header.inlineBytes = static_cast<std::uint32_t>(size);
    request.SerializeWithCachedSizesToArray(slot + sizeof header);
  } else if (size <= geometry_.requestArenaBytes) {
    header.kind = static_cast<std::uint32_t>(SlotKind::kArena);
    header.arenaOffset = 0;  // one call in flight, so the arena is free
    header.arenaBytes = size;
    request.SerializeWithCachedSizesToArray(base + geometry_.requestArenaOffset);
  } else {
    broken("a request of " + std::to_string(size) + " bytes exceeds the request arena");
    return false;
  }
  std::memcpy(slot, &header, sizeof header);
  ++requestProduced_;
  control.requestProduced.value.store(requestProduced_, std::memory_order_seq_cst);
  shm::ring(control.requestBell);
  return true;
}

TransportStatus ShmCallTransport::receiveReply(v1::CallReply* reply) {
  shm::ControlBlock& control = region_->control();
  const auto outcome = shm::waitFor(
      control.completionBell, policy_,
      [&] { return control.completionProduced.value.load(std::memory_order_seq_cst) != completionConsumed_; },
      [&] { return !shm::peerGone(socketFd_); });
  if (outcome == shm::WaitOutcome::kGaveUp) return broken("the worker closed the connection");

  const std::uint64_t produced = control.completionProduced.value.load(std::memory_order_acquire);
  const shm::IndexCheck check =
      shm::entriesToConsume(produced, lastCompletionProduced_, completionConsumed_, geometry_.slotCount);
  if (check.verdict != shm::IndexVerdict::kOk || check.count != 1) {
    return broken(std::string("completion ring: ") + shm::toString(check.verdict));
  }
  lastCompletionProduced_ = produced;
  const std::uint8_t* base = region_->base();
  const std::uint8_t* slot = base + shm::slotOffset(geometry_.completionRingOffset, completionConsumed_, geometry_);
  SlotHeader header;
  std::memcpy(&header, slot, sizeof header);
  if (header.callId != nextCallId_) return broken("a completion for another call");
  ++nextCallId_;

  TransportStatus status = TransportStatus::kOk;
  switch (static_cast<CompletionStatus>(header.status)) {
    case CompletionStatus::kOk: {
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
      break;
    }
    case CompletionStatus::kRejected:
      brokenStatus_ = TransportStatus::kRejected;
      return broken("the worker refused the session token");
    case CompletionStatus::kReplyTooLarge:
      return broken("the reply exceeded the reply arena");
    default:
      return broken("a completion of unknown status");
  }
  ++completionConsumed_;
  control.completionConsumed.value.store(completionConsumed_, std::memory_order_release);
  return status;
}

}  // namespace agileos::client
