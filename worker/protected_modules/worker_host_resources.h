// modules::HostResources of ONE client on the worker's memory manager and GPU.
//
// I/O mappings: the memory manager chooses the address in the MMIO window of the I/O aperture
// (memmgr/address_layout.h kMmioWindow, never reserved on the GPU), the file is mapped there
// with mmap(MAP_FIXED_NOREPLACE) and the address the kernel returned is checked, then the range
// is registered for GPU access and the device address the driver gives is checked to equal the
// host address (so device code and the plugin use one address, inside the protected aperture).
// Any failed step undoes the ones before it. A placement whose address turned out to be taken
// by a foreign mapping is kept out of use until the object is destroyed.
//
// Thread-safety: all methods may be called from any thread (a mutex guards the records).
// Ownership: every mapping it made is unregistered and unmapped by unmapIo or the destructor.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "memmgr/memory_manager.h"
#include "modules/host/host_resources.h"
#include "worker/backend/gpu_backend.h"

namespace agileos::worker::protected_modules {

class WorkerHostResources final : public agileos::modules::HostResources {
 public:
  // `memory` and `gpu` must outlive this object.
  WorkerHostResources(memmgr::MemoryManager& memory, GpuBackend& gpu, memmgr::ClientId client)
      : memory_(memory), gpu_(gpu), client_(client) {}
  ~WorkerHostResources() override;
  WorkerHostResources(const WorkerHostResources&) = delete;
  WorkerHostResources& operator=(const WorkerHostResources&) = delete;

  int exportProtected(std::uint64_t device_address, int* fd) override;
  int mapIo(int fd, std::uint64_t offset, std::uint64_t bytes, bool deviceMemory,
            std::uint64_t* address) override;
  int unmapIo(std::uint64_t address) override;
  int checkExactUserAllocation(std::uint64_t device_address, std::uint64_t bytes) override;
  int exportUserAllocation(std::uint64_t device_address, std::uint64_t bytes, int* fd,
                           std::uint64_t* handle_bytes, std::uint64_t* offset) override;

  std::size_t liveMappings() const;

 private:
  // Unregisters, unmaps and releases one mapping. Caller holds mutex_.
  int unmapLocked(std::uint64_t address, std::uint64_t mappedBytes);

  memmgr::MemoryManager& memory_;
  GpuBackend& gpu_;
  const memmgr::ClientId client_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::uint64_t> mappings_;  // address -> mapped bytes (page rounded)
  std::vector<std::uint64_t> unusable_;              // placements taken by foreign mappings
};

}  // namespace agileos::worker::protected_modules
