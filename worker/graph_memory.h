// GraphMemory: one client's graph allocation reservations (CUDA graph memory nodes, and
// cudaMallocAsync captured into a graph), as the worker keeps them.
//
// A graph's allocation node has one address for every launch, fixed when the node is added. The
// client asks for a reservation of the node's size when it adds the node; the memory manager
// places and backs it at once, like a cudaMalloc (charged to the client's quota from then on),
// but its table entry is not live (memmgr kGraphReserved): no copy, memset or free of the client
// passes the checks for it. A launch makes it live when the allocation node runs (a request of
// its own, ordered with the client's other calls) and a free node, cudaFreeAsync or cudaFree makes
// it not live again; the memory stays reserved, for the next launch, until the client releases
// the reservation (the last graph that holds the node is destroyed). A reservation released while
// live goes when it is freed.
//
// Invariants: every entry here has a table entry of the same client at the same base, kGraphLive
// exactly when `live`; a `released` entry is live (one that is not is given back at once).
// Thread-safety: every member is safe to call concurrently; the handlers that change liveness run
// exclusively within their client (Exclusivity::kInvalidates).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "memmgr/memory_manager.h"

namespace agileos::worker {

class GraphMemory {
 public:
  // At most this many reservations per client (each is a few words; the quota bounds the memory).
  static constexpr std::size_t kMaxReservations = 1 << 16;

  // Bytes of the client's reservations (reserved) and of those that are live (used), with their
  // high-water marks (cudaDeviceGetGraphMemAttribute).
  struct Usage {
    std::uint64_t usedBytes = 0;
    std::uint64_t usedHigh = 0;
    std::uint64_t reservedBytes = 0;
    std::uint64_t reservedHigh = 0;
  };

  enum class Outcome {
    kDone,
    kUnknown,     // not the base of a reservation of this client
    kWrongState,  // live where it must not be, or the other way round
    kRelease,     // done; the reservation was released and is not live: the caller gives it back
  };

  bool full() const;
  void noteReserved(memmgr::DevicePtr base, std::uint64_t size);
  bool isReservation(memmgr::DevicePtr base) const;
  bool isLive(memmgr::DevicePtr base) const;
  // Not live -> live (kWrongState if live already).
  Outcome activate(memmgr::DevicePtr base);
  // Live -> not live (kWrongState if not live); kRelease if it was released meanwhile.
  Outcome deactivate(memmgr::DevicePtr base);
  // The client holds the reservation no more: kRelease when it is not live (forgotten here), else
  // kDone and it is given back at its deactivation. *everLive: whether any launch made it live
  // (then work on the device may still use it, and the caller waits before giving it back).
  Outcome release(memmgr::DevicePtr base, bool* everLive);

  Usage usage() const;
  // Attribute writes of the high-water marks: CUDA allows only 0, which resets a mark to the
  // current value.
  void resetUsedHigh();
  void resetReservedHigh();
  // At cudaDeviceReset and at teardown (the memory goes with the rest of the client's).
  void clear();

 private:
  struct Reservation {
    std::uint64_t size = 0;
    bool live = false;
    bool released = false;
    bool everLive = false;
  };
  void raiseHighs();  // under mutex_

  mutable std::mutex mutex_;
  std::map<memmgr::DevicePtr, Reservation> reservations_;
  Usage usage_;
};

}  // namespace agileos::worker
