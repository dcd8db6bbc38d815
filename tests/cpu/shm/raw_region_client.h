// RawRegionClient: writes the client's side of a region by hand (slots, indices), so
// tests can drive ShmWorkerChannel with exactly the bytes they want, well formed or not.
#pragma once

#include <cstdint>
#include <string>

#include "proto/shm/mapped_region.h"

namespace agileos::shm::testing {

class RawRegionClient {
 public:
  explicit RawRegionClient(const MappedRegion& region) : region_(region), g_(region.geometry()) {}

  // Writes `message` into the next request slot (inline if it fits, else the arena at
  // offset 0) and publishes it. Does not check for space: tests decide.
  void pushRequest(std::uint64_t callId, const std::string& message);
  // Writes a raw header (and no payload) into the next slot and publishes it.
  void pushHeader(const SlotHeader& header);
  void publishRequests(std::uint64_t produced);  // sets the request index to any value

  struct Completion {
    SlotHeader header;
    std::string message;
  };
  // Reads completion `index` (no checks: the worker under test wrote it) without consuming.
  Completion peekCompletion(std::uint64_t index) const;
  std::uint64_t completionsProduced() const;
  void consumeCompletions(std::uint64_t consumed);

  std::uint64_t requestsProduced() const { return produced_; }

 private:
  const MappedRegion& region_;
  const RegionGeometry g_;
  std::uint64_t produced_ = 0;
};

// Small sizes so tests wrap the rings quickly: 4 slots of 256 bytes, 64 KiB arenas.
RegionSizes smallRegionSizes();

}  // namespace agileos::shm::testing
