#include "proto/shm/ring_layout.h"

#include "proto/shm/ring_index.h"

namespace agileos::shm {
namespace {

// Bounds that keep every size computation far from overflow.
constexpr std::uint32_t kMaxSlotCount = 1u << 16;
constexpr std::uint32_t kMaxSlotBytes = 1u << 20;
constexpr std::uint64_t kMaxArenaBytes = 1ull << 32;

bool isPowerOfTwo(std::uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

bool sizesUsable(std::uint32_t slotCount, std::uint32_t slotBytes, std::uint64_t requestArenaBytes,
                 std::uint64_t replyArenaBytes, std::uint64_t stagingBytes) {
  return isPowerOfTwo(slotCount) && slotCount <= kMaxSlotCount && slotBytes > sizeof(SlotHeader) &&
         slotBytes <= kMaxSlotBytes && slotBytes % kCacheLine == 0 && requestArenaBytes <= kMaxArenaBytes &&
         replyArenaBytes <= kMaxArenaBytes && stagingBytes <= kMaxArenaBytes;
}

}  // namespace

const char* toString(IndexVerdict verdict) {
  switch (verdict) {
    case IndexVerdict::kOk:
      return "ok";
    case IndexVerdict::kBackwards:
      return "index went backwards";
    case IndexVerdict::kTooFarAhead:
      return "index ahead of what the ring can hold";
  }
  return "unknown";
}

bool computeGeometry(const RegionSizes& sizes, RegionGeometry* geometry) {
  if (!sizesUsable(sizes.slotCount, sizes.slotBytes, sizes.requestArenaBytes, sizes.replyArenaBytes,
                   sizes.stagingBytes)) {
    return false;
  }
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t ringBytes = std::uint64_t{sizes.slotCount} * sizes.slotBytes;
  RegionGeometry g{};
  g.magic = kRegionMagic;
  g.version = kRegionVersion;
  g.slotCount = sizes.slotCount;
  g.slotBytes = sizes.slotBytes;
  g.requestRingOffset = roundUp(sizeof(ControlBlock), kPage);
  g.completionRingOffset = roundUp(g.requestRingOffset + ringBytes, kPage);
  g.requestArenaOffset = roundUp(g.completionRingOffset + ringBytes, kPage);
  g.requestArenaBytes = sizes.requestArenaBytes;
  g.replyArenaOffset = roundUp(g.requestArenaOffset + g.requestArenaBytes, kPage);
  g.replyArenaBytes = sizes.replyArenaBytes;
  g.stagingOffset = roundUp(g.replyArenaOffset + g.replyArenaBytes, kPage);
  g.stagingBytes = sizes.stagingBytes;
  g.regionBytes = roundUp(g.stagingOffset + g.stagingBytes, kPage);
  *geometry = g;
  return true;
}

bool validGeometry(const RegionGeometry& g, std::uint64_t mappedBytes) {
  if (g.magic != kRegionMagic || g.version != kRegionVersion) return false;
  if (!sizesUsable(g.slotCount, g.slotBytes, g.requestArenaBytes, g.replyArenaBytes, g.stagingBytes))
    return false;
  if (g.regionBytes > mappedBytes) return false;
  const std::uint64_t ringBytes = std::uint64_t{g.slotCount} * g.slotBytes;
  const std::uint64_t start = sizeof(ControlBlock);
  // Each part lies inside the region, after the control block; parts may not overlap
  // (checked by their order, which computeGeometry() fixes).
  return g.requestRingOffset >= start && rangeWithin(g.requestRingOffset, ringBytes, g.regionBytes) &&
         g.completionRingOffset >= g.requestRingOffset + ringBytes &&
         rangeWithin(g.completionRingOffset, ringBytes, g.regionBytes) &&
         g.requestArenaOffset >= g.completionRingOffset + ringBytes &&
         rangeWithin(g.requestArenaOffset, g.requestArenaBytes, g.regionBytes) &&
         g.replyArenaOffset >= g.requestArenaOffset + g.requestArenaBytes &&
         rangeWithin(g.replyArenaOffset, g.replyArenaBytes, g.regionBytes) &&
         g.stagingOffset >= g.replyArenaOffset + g.replyArenaBytes &&
         rangeWithin(g.stagingOffset, g.stagingBytes, g.regionBytes);
}

}  // namespace agileos::shm
