// AllocationTable: every live device range a client may name, keyed by base address.
//
// Invariants:
// - Entries never overlap.
// - Each entry has exactly one owner; lookups are always made on behalf of a
//   client, and another client's entry is reported as kForeign, never as kOk.
// - check() is O(log n) in the number of live entries.
//
// Thread-safety: all methods are safe to call concurrently (internal shared mutex).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "memmgr/address_layout.h"

namespace agileos::memmgr {

enum class AllocationKind {
  kUser,            // cudaMalloc and friends; the client may free it
  kModuleGlobal,    // a __device__/__constant__ variable of a module the client loaded; not freeable
  kVirtualMapping,  // physical memory the client mapped into its own reservation (cuMemMap); not
                    // freeable, cuMemUnmap removes it
  // A graph allocation's reservation (worker/graph_memory.h): memory that is the client's for as
  // long as a graph holds the node, but that the client may name only while it is live (between
  // the run of its allocation node and its free). Neither kind is freeable by free(): the
  // reservation outlives a free of the allocation.
  kGraphReserved,  // not live: check() answers kUnknown, as for memory that was never allocated
  kGraphLive,      // live: checked like kUser
};

struct Allocation {
  DevicePtr base = 0;
  std::uint64_t size = 0;  // bytes the client asked for (not the rounded mapping)
  ClientId owner = 0;
  AllocationKind kind = AllocationKind::kUser;

  DevicePtr end() const { return base + size; }  // one past the last byte; insert() rules out overflow
};

// The verdict on an untrusted range [p, p+n).
enum class PointerCheck {
  kOk,           // inside one live allocation of this client
  kNull,         // p == 0
  kOverflow,     // p + n wraps around 2^64
  kProtected,    // touches the I/O aperture or the module range
  kUnknown,      // not inside any live allocation (never allocated, or freed)
  kForeign,      // starts inside another client's allocation
  kOutOfBounds,  // starts inside one of this client's allocations but runs past its end
};

const char* toString(PointerCheck verdict);

class AllocationTable {
 public:
  // Fails (returns false) if the range is empty, overflows or overlaps a live entry.
  bool insert(const Allocation& allocation);

  // Removes the entry whose base is exactly `base`, if it is owned by `owner` and
  // has kind `kind`. Returns the removed entry.
  std::optional<Allocation> erase(ClientId owner, DevicePtr base, AllocationKind kind);

  // Changes the kind of the entry whose base is exactly `base` from `from` to `to`, if it is owned
  // by `owner` and has kind `from`; false, changing nothing, otherwise.
  bool changeKind(ClientId owner, DevicePtr base, AllocationKind from, AllocationKind to);

  // Removes and returns every entry owned by `owner`.
  std::vector<Allocation> eraseAll(ClientId owner);

  // Classifies [p, p+n). n == 0 is checked as a single byte at p. The verdicts are
  // decided in this order: kNull, kOverflow (p + n not representable in 64 bits),
  // kProtected (arithmetic, before any lookup), then by the entry containing p:
  // none -> kUnknown, another owner's -> kForeign, own but not live (kGraphReserved) -> kUnknown,
  // own but [p, p+n) runs past its end -> kOutOfBounds, else kOk. The one exception: a kVirtualMapping entry
  // continues into the next while that one starts exactly at its end and is a kVirtualMapping of the same
  // client (cuMemMap'd ranges back to back are contiguous device memory); O(entries crossed).
  PointerCheck check(ClientId client, DevicePtr p, std::uint64_t n) const;

  // The live entry containing p, whoever owns it.
  std::optional<Allocation> find(DevicePtr p) const;

  std::size_t size() const;
  // Sum of the requested sizes of `owner`'s live entries (user allocations and module globals). O(1).
  std::uint64_t bytesOwnedBy(ClientId owner) const;

 private:
  // The entry containing p, or end(). Caller holds mutex_.
  std::map<DevicePtr, Allocation>::const_iterator containing(DevicePtr p) const;

  mutable std::shared_mutex mutex_;
  std::map<DevicePtr, Allocation> byBase_;
  std::unordered_map<ClientId, std::uint64_t> bytesByOwner_;  // no zero entries are kept
};

}  // namespace agileos::memmgr
