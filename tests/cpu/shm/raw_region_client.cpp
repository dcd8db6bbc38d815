#include "tests/cpu/shm/raw_region_client.h"

#include <cstring>

namespace agileos::shm::testing {

RegionSizes smallRegionSizes() {
  RegionSizes sizes;
  sizes.slotCount = 4;
  sizes.slotBytes = 256;
  sizes.requestArenaBytes = 64 << 10;
  sizes.replyArenaBytes = 64 << 10;
  sizes.stagingBytes = 64 << 10;
  return sizes;
}

void RawRegionClient::pushRequest(std::uint64_t callId, const std::string& message) {
  SlotHeader header{};
  header.callId = callId;
  std::uint8_t* slot = region_.base() + slotOffset(g_.requestRingOffset, produced_, g_);
  if (message.size() <= slotPayloadBytes(g_)) {
    header.kind = static_cast<std::uint32_t>(SlotKind::kInline);
    header.inlineBytes = static_cast<std::uint32_t>(message.size());
    std::memcpy(slot + sizeof header, message.data(), message.size());
  } else {
    header.kind = static_cast<std::uint32_t>(SlotKind::kArena);
    header.arenaBytes = message.size();
    std::memcpy(region_.base() + g_.requestArenaOffset, message.data(), message.size());
  }
  std::memcpy(slot, &header, sizeof header);
  publishRequests(produced_ + 1);
}

void RawRegionClient::pushHeader(const SlotHeader& header) {
  std::memcpy(region_.base() + slotOffset(g_.requestRingOffset, produced_, g_), &header, sizeof header);
  publishRequests(produced_ + 1);
}

void RawRegionClient::publishRequests(std::uint64_t produced) {
  produced_ = produced;
  region_.control().requestProduced.value.store(produced, std::memory_order_seq_cst);
}

RawRegionClient::Completion RawRegionClient::peekCompletion(std::uint64_t index) const {
  Completion completion;
  const std::uint8_t* slot = region_.base() + slotOffset(g_.completionRingOffset, index, g_);
  std::memcpy(&completion.header, slot, sizeof completion.header);
  if (completion.header.kind == static_cast<std::uint32_t>(SlotKind::kInline)) {
    completion.message.assign(reinterpret_cast<const char*>(slot) + sizeof(SlotHeader),
                              completion.header.inlineBytes);
  } else {
    completion.message.assign(reinterpret_cast<const char*>(region_.base() + g_.replyArenaOffset),
                              completion.header.arenaBytes);
  }
  return completion;
}

std::uint64_t RawRegionClient::completionsProduced() const {
  return region_.control().completionProduced.value.load(std::memory_order_acquire);
}

void RawRegionClient::consumeCompletions(std::uint64_t consumed) {
  region_.control().completionConsumed.value.store(consumed, std::memory_order_release);
}

}  // namespace agileos::shm::testing
