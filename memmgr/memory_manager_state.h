// MemoryManager's state (memory_manager.cpp, memory_manager_vmm.cpp): internal to memmgr.
// Every member is guarded by MemoryManager::mutex_.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>

#include "memmgr/chunk_suballocator.h"
#include "memmgr/mapping_lifecycle.h"
#include "memmgr/memory_manager.h"
#include "memmgr/va_range_allocator.h"

namespace agileos::memmgr {

// Takes `bytes` off `client`'s count in a per-client byte count that keeps no zero entries.
inline void subtractBytes(std::unordered_map<ClientId, std::uint64_t>& counts, ClientId client,
                          std::uint64_t bytes) {
  auto it = counts.find(client);
  it->second -= bytes;
  if (it->second == 0) counts.erase(it);
}

struct MemoryManager::State {
  struct LargeAllocation {
    BackedRange range;
    ClientId owner = 0;
    ProtectedUse use = ProtectedUse::kState;  // protected allocations only
  };
  using Allocations = std::map<DevicePtr, LargeAllocation>;  // by base

  // Destroys (scrubs, unmaps, releases) and forgets every allocation of `client` in `from`.
  static void destroyAllOf(ClientId client, Allocations& from, MappingLifecycle& lifecycle) {
    for (auto it = from.begin(); it != from.end();) {
      if (it->second.owner != client) {
        ++it;
        continue;
      }
      lifecycle.destroy(it->second.range);
      it = from.erase(it);
    }
  }

  explicit State(VmmBackend& backend, std::uint64_t granularity)
      : addresses(kUserRange, granularity),
        // Exportable, for modules' DMA registrations (exportUserAllocation).
        mappings(backend, addresses, /*exportable=*/true),
        // A chunk holds at least one slot of the largest size class (kSmallAllocationLimit).
        chunks(std::max<std::uint64_t>(granularity, kSmallAllocationLimit), kEmptyChunksCachedPerClient),
        protectedAddresses(kModuleRange, granularity),
        protectedMappings(backend, protectedAddresses, /*exportable=*/true),
        ioAddresses(kMmioWindow, kIoPlacementAlignment) {}

  VaRangeAllocator addresses;  // the user range; declared before mappings, which refers to it
  MappingLifecycle mappings;
  ChunkSuballocator chunks;
  Allocations large;
  std::unordered_map<ClientId, std::uint64_t> largeBytesOf;  // mapped bytes; no zero entries
  std::unordered_map<ClientId, std::uint64_t> quotas;        // setQuota; no zero entries
  // setDriverCharge, by DriverShare; no entry whose shares are all zero.
  std::unordered_map<ClientId, std::array<std::uint64_t, std::size_t(DriverShare::kCount)>> driverCharges;
  VaRangeAllocator protectedAddresses;  // the module range; before protectedMappings
  MappingLifecycle protectedMappings;   // exportable: a module may share its memory with its service
  Allocations protectedAllocations;
  VaRangeAllocator ioAddresses;  // host placements in the MMIO window
  struct IoPlacement {
    std::uint64_t size = 0;
    ClientId owner = 0;
  };
  std::map<DevicePtr, IoPlacement> ioPlacements;  // by base
  std::set<ClientId> runningUnguardedCode;        // admitUnguardedCode

  // Client virtual memory (memory_manager_vmm.cpp). A reservation's addresses come from
  // `addresses`, like every user mapping, so nothing else is ever placed in it.
  struct Reservation {
    std::uint64_t size = 0;
    ClientId owner = 0;
  };
  std::map<DevicePtr, Reservation> reservations;                // by base
  std::unordered_map<ClientId, std::uint64_t> reservedBytesOf;  // no zero entries
  // A cuMemCreate allocation: physical memory with the worker's own mapping of it (`home`, made
  // and destroyed by `mappings`, so its teardown scrubs it), the client's mappings of it counted.
  struct PhysicalAllocation {
    BackedRange home;
    ClientId owner = 0;
    std::uint64_t mappings = 0;
    // cuMemCreate's reference and each cuMemRetainAllocationHandle's; cuMemRelease drops one.
    // At 0 the handle is gone for the client, and the memory goes when `mappings` reaches 0 too.
    std::uint64_t references = 1;
  };
  std::map<std::uint64_t, PhysicalAllocation> physical;  // by handle
  std::uint64_t nextHandle = 1;
  struct ClientMapping {
    std::uint64_t size = 0;
    ClientId owner = 0;
    std::uint64_t handle = 0;
  };
  std::map<DevicePtr, ClientMapping> clientMappings;  // by address
  // Bytes of the client's physical allocations and graph blocks, charged; no zero entries.
  std::unordered_map<ClientId, std::uint64_t> physicalBytesOf;

  // Graph allocations (memory_manager_graph.cpp). A reservation's addresses come from `addresses`
  // and count in reservedBytesOf; `block` is the graph block mapped there (0: none).
  struct GraphReservation {
    std::uint64_t span = 0;
    ClientId owner = 0;
    std::uint64_t block = 0;
  };
  std::map<DevicePtr, GraphReservation> graphReservations;  // by base
  struct GraphBlock {
    BackedRange home;  // made and destroyed by `mappings`, so its teardown scrubs it
    ClientId owner = 0;
    std::uint64_t mappings = 0;  // reservations it is mapped at
  };
  std::map<std::uint64_t, GraphBlock> graphBlocks;  // by id
  std::uint64_t nextGraphBlock = 1;
};

}  // namespace agileos::memmgr
