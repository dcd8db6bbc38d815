// The worker's protected device memory as a module instance sees it: memory in the protected
// module range (docs/architecture.md, 0xF1000000000-0xF8000000000), out of reach of client
// kernels. The worker implements it with its memory manager; tests use a fake.
//
// Callers (InstanceAllocations) only ever pass addresses and ranges inside allocations this
// interface returned and that are still live, so an implementation need not re-check ownership.
#pragma once

#include <cstdint>

namespace agileos::modules {

class ProtectedMemory {
 public:
  virtual ~ProtectedMemory() = default;

  // Allocates `bytes` (> 0); returns 0 and the device address, or a negative AGILEOS_MODULE_E*.
  virtual int allocate(std::uint64_t bytes, std::uint64_t* device_address) = 0;
  // Frees the allocation starting at `device_address`. Returns 0 or a negative code.
  virtual int free(std::uint64_t device_address) = 0;
  // Copies `bytes` (> 0) into or out of device memory. Returns 0 or a negative code.
  virtual int write(std::uint64_t device_address, const void* src, std::uint64_t bytes) = 0;
  virtual int read(std::uint64_t device_address, void* dst, std::uint64_t bytes) = 0;
};

}  // namespace agileos::modules
