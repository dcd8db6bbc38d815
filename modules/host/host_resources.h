// What the worker offers a module instance beyond protected memory (ProtectedMemory): sharing
// protected memory with a service, I/O mappings in the I/O aperture, and checks of client
// allocations for DMA registration. The worker implements it per client on its memory manager
// and GPU; tests use fakes.
//
// ModuleInstance keeps the per-instance bookkeeping (which mappings and registrations are the
// instance's, revocation at teardown); an implementation only performs the operations, for ONE
// client, and refuses what is not that client's.
#pragma once

#include <cstdint>

namespace agileos::modules {

class HostResources {
 public:
  virtual ~HostResources() = default;

  // Exports the protected allocation starting at `device_address` (one of this client's, which
  // the caller has checked is the instance's) as a POSIX descriptor the caller owns.
  virtual int exportProtected(std::uint64_t device_address, int* fd) = 0;

  // Maps [offset, offset + bytes) of `fd` into the I/O aperture and registers it for the GPU;
  // *address is its host and device address. Returns 0 or a negative AGILEOS_MODULE_E*.
  virtual int mapIo(int fd, std::uint64_t offset, std::uint64_t bytes, bool deviceMemory,
                    std::uint64_t* address) = 0;
  // Undoes a mapIo of this client (exact address).
  virtual int unmapIo(std::uint64_t address) = 0;

  // 0 if [device_address, device_address + bytes) is exactly one live allocation of the client
  // (its start and its requested size), else AGILEOS_MODULE_EPERM.
  virtual int checkExactUserAllocation(std::uint64_t device_address, std::uint64_t bytes) = 0;

  // Exports the physical memory behind the client's allocation that is exactly
  // [device_address, device_address + bytes) (MemoryManager::exportUserAllocation).
  virtual int exportUserAllocation(std::uint64_t device_address, std::uint64_t bytes, int* fd,
                                   std::uint64_t* handle_bytes, std::uint64_t* offset) = 0;
};

}  // namespace agileos::modules
