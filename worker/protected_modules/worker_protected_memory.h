// modules::ProtectedMemory of ONE client on the worker's memory manager and GPU: the protected
// allocations of that client's module instances live in the protected module range, keyed by
// the client's id (so they count in MemoryManager::protectedBytes and turn the client's kernel
// memory guard on, as intended), and their contents move by synchronous copies.
//
// InstanceAllocations (modules/host) only ever passes ranges inside live allocations it made
// through this object, so nothing here re-checks ownership beyond what freeProtected does.
// Thread-safe: it holds no state of its own; the memory manager and the backend are.
#pragma once

#include "memmgr/memory_manager.h"
#include "modules/host/protected_memory.h"
#include "worker/backend/gpu_backend.h"

namespace agileos::worker::protected_modules {

class WorkerProtectedMemory final : public agileos::modules::ProtectedMemory {
 public:
  // `memory` and `gpu` must outlive this object.
  WorkerProtectedMemory(memmgr::MemoryManager& memory, GpuBackend& gpu, memmgr::ClientId client)
      : memory_(memory), gpu_(gpu), client_(client) {}

  int allocate(std::uint64_t bytes, std::uint64_t* device_address) override;
  int free(std::uint64_t device_address) override;
  int write(std::uint64_t device_address, const void* src, std::uint64_t bytes) override;
  int read(std::uint64_t device_address, void* dst, std::uint64_t bytes) override;

 private:
  memmgr::MemoryManager& memory_;
  GpuBackend& gpu_;
  const memmgr::ClientId client_;
};

}  // namespace agileos::worker::protected_modules
