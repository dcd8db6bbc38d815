// Index arithmetic of the single-producer single-consumer rings (ring_layout.h),
// with the checks that make an index published by an untrusted peer harmless.
//
// Indices are free-running 64-bit counters: they never wrap in practice (2^64
// messages), so "behind" and "ahead" are plain comparisons. A published index that
// goes backwards, or claims more than the ring holds, is a protocol violation: the
// side that sees it ends the connection. Pure functions; no shared memory is read here.
#pragma once

#include <cstdint>

namespace agileos::shm {

enum class IndexVerdict {
  kOk,
  kBackwards,    // the peer's counter went below a value it already published
  kTooFarAhead,  // the peer claims more entries than the ring can hold, or than were produced
};

const char* toString(IndexVerdict verdict);

struct IndexCheck {
  IndexVerdict verdict = IndexVerdict::kOk;
  std::uint64_t count = 0;  // entries to consume, or slots free to produce into, when kOk
};

// Consumer side. `produced` was just read from the peer; `lastProduced` is the last value
// this side accepted (private), `consumed` its own private consume index.
inline IndexCheck entriesToConsume(std::uint64_t produced, std::uint64_t lastProduced, std::uint64_t consumed,
                                   std::uint32_t slotCount) {
  if (produced < lastProduced || produced < consumed) return {IndexVerdict::kBackwards, 0};
  if (produced - consumed > slotCount) return {IndexVerdict::kTooFarAhead, 0};
  return {IndexVerdict::kOk, produced - consumed};
}

// Producer side. `consumed` was just read from the peer; `lastConsumed` is the last value
// this side accepted (private), `produced` its own private produce index.
inline IndexCheck slotsFreeToProduce(std::uint64_t consumed, std::uint64_t lastConsumed, std::uint64_t produced,
                                     std::uint32_t slotCount) {
  if (consumed < lastConsumed) return {IndexVerdict::kBackwards, 0};
  if (consumed > produced) return {IndexVerdict::kTooFarAhead, 0};
  // produced - consumed <= slotCount holds because this side only produces into free slots.
  const std::uint64_t used = produced - consumed;
  if (used > slotCount) return {IndexVerdict::kTooFarAhead, 0};
  return {IndexVerdict::kOk, slotCount - used};
}

}  // namespace agileos::shm
