#include "worker/transport/shm_worker_channel.h"

#include <cstddef>
#include <cstring>

#include "proto/shm/doorbell.h"
#include "proto/shm/ring_index.h"

namespace agileos::worker {

using shm::CompletionStatus;
using shm::SlotHeader;
using shm::SlotKind;

ShmWorkerChannel::ShmWorkerChannel(const shm::MappedRegion& region)
    : region_(region), geometry_(region.geometry()), control_(region.control()) {}

bool ShmWorkerChannel::requestIndexMoved() const {
  return control_.requestProduced.value.load(std::memory_order_seq_cst) != requestConsumed_;
}

bool ShmWorkerChannel::unawaitedRequestQueued() const {
  if (!requestIndexMoved()) return false;
  // The slot at our own consume index lies within the ring whatever the client published.
  const std::uint8_t* slot =
      region_.base() + shm::slotOffset(geometry_.requestRingOffset, requestConsumed_, geometry_);
  std::uint32_t status = 0;
  std::memcpy(&status, slot + offsetof(SlotHeader, status), sizeof status);
  return (status & shm::kNoReply) != 0;
}

ShmWorkerChannel::Take ShmWorkerChannel::takeRequest(std::uint64_t* callId, std::string* message,
                                                     bool* noReply) {
  const std::uint64_t produced = control_.requestProduced.value.load(std::memory_order_acquire);
  const shm::IndexCheck check =
      shm::entriesToConsume(produced, lastRequestProduced_, requestConsumed_, geometry_.slotCount);
  if (check.verdict != shm::IndexVerdict::kOk) {
    return fail(Take::kViolation, std::string("request ring: ") + shm::toString(check.verdict) +
                                      " (published " + std::to_string(produced) + ", consumed " +
                                      std::to_string(requestConsumed_) + ")");
  }
  lastRequestProduced_ = produced;
  if (check.count == 0) return Take::kEmpty;

  // Copy the header first, then exactly the bytes it names: the client may rewrite the slot
  // while we look at it, so nothing is read from it twice.
  const std::uint8_t* base = region_.base();
  const std::uint8_t* slot = base + shm::slotOffset(geometry_.requestRingOffset, requestConsumed_, geometry_);
  SlotHeader header;
  std::memcpy(&header, slot, sizeof header);
  if ((header.status & ~std::uint32_t{shm::kNoReply}) != 0) {
    return fail(Take::kViolation, "request slot: unknown flags " + std::to_string(header.status));
  }
  *noReply = (header.status & shm::kNoReply) != 0;
  switch (static_cast<SlotKind>(header.kind)) {
    case SlotKind::kInline:
      if (header.inlineBytes > shm::slotPayloadBytes(geometry_)) {
        return fail(Take::kViolation, "request slot: inline length " + std::to_string(header.inlineBytes) +
                                          " exceeds the slot");
      }
      message->assign(reinterpret_cast<const char*>(slot) + sizeof header, header.inlineBytes);
      break;
    case SlotKind::kArena:
      if (!shm::rangeWithin(header.arenaOffset, header.arenaBytes, geometry_.requestArenaBytes)) {
        return fail(Take::kViolation, "request slot: arena range [" + std::to_string(header.arenaOffset) +
                                          ", +" + std::to_string(header.arenaBytes) + ") outside the arena");
      }
      message->resize(header.arenaBytes);
      std::memcpy(message->data(), base + geometry_.requestArenaOffset + header.arenaOffset,
                  header.arenaBytes);
      break;
    default:
      return fail(Take::kViolation, "request slot: unknown kind " + std::to_string(header.kind));
  }
  *callId = header.callId;
  ++requestConsumed_;
  control_.requestConsumed.value.store(requestConsumed_, std::memory_order_release);
  return Take::kRequest;
}

ShmWorkerChannel::Put ShmWorkerChannel::putCompletion(std::uint64_t callId, CompletionStatus status,
                                                      const google::protobuf::MessageLite* reply) {
  const std::size_t size = reply != nullptr ? reply->ByteSizeLong() : 0;
  const bool needsArena = size > shm::slotPayloadBytes(geometry_);
  // The client's consume index is re-read (and checked) only when the last value accepted
  // leaves no free slot, or the reply needs the arena: a shared cache line fewer per call.
  std::uint64_t consumed = lastCompletionConsumed_;
  if (needsArena || completionProduced_ - lastCompletionConsumed_ >= geometry_.slotCount) {
    consumed = control_.completionConsumed.value.load(std::memory_order_acquire);
    const shm::IndexCheck check =
        shm::slotsFreeToProduce(consumed, lastCompletionConsumed_, completionProduced_, geometry_.slotCount);
    if (check.verdict != shm::IndexVerdict::kOk) {
      return fail(Put::kViolation, std::string("completion ring: ") + shm::toString(check.verdict) +
                                       " (consumed " + std::to_string(consumed) + ", produced " +
                                       std::to_string(completionProduced_) + ")");
    }
    lastCompletionConsumed_ = consumed;
    if (check.count == 0) return Put::kFull;
  }

  std::uint8_t* slot =
      region_.base() + shm::slotOffset(geometry_.completionRingOffset, completionProduced_, geometry_);
  SlotHeader header{};
  header.kind = static_cast<std::uint32_t>(SlotKind::kInline);
  header.callId = callId;
  header.status = static_cast<std::uint32_t>(status);
  if (reply != nullptr) {
    // Serialized straight into shared memory: the serializer only writes its output.
    if (!needsArena) {
      header.inlineBytes = static_cast<std::uint32_t>(size);
      reply->SerializeWithCachedSizesToArray(slot + sizeof header);
    } else if (size <= geometry_.replyArenaBytes) {
      // The arena holds one reply: wait until the client has read every earlier one.
      if (consumed != completionProduced_) return Put::kFull;
      header.kind = static_cast<std::uint32_t>(SlotKind::kArena);
      header.arenaOffset = 0;
      header.arenaBytes = size;
      reply->SerializeWithCachedSizesToArray(region_.base() + geometry_.replyArenaOffset);
    } else {
      header.status = static_cast<std::uint32_t>(CompletionStatus::kReplyTooLarge);
    }
  }
  std::memcpy(slot, &header, sizeof header);
  ++completionProduced_;
  control_.completionProduced.value.store(completionProduced_, std::memory_order_seq_cst);
  shm::ring(control_.completionBell);
  return Put::kDone;
}

}  // namespace agileos::worker
