// The protected allocations of ONE module instance, and the only path by which a plugin reaches
// ProtectedMemory. Invariant: every address passed on to ProtectedMemory lies in an allocation
// this object made and has not yet freed; a free must name the start of such an allocation, a
// read or write must fit inside one (checked without overflow). Anything else is refused with
// AGILEOS_MODULE_EPERM or AGILEOS_MODULE_ERANGE and never reaches ProtectedMemory.
//
// Not thread-safe: ModuleInstance calls it only from the one thread inside the instance.
#pragma once

#include <cstdint>
#include <map>

#include "modules/host/protected_memory.h"

namespace agileos::modules {

struct RevocationReport {
  std::uint64_t allocations = 0;  // allocations the plugin left and the worker freed
  std::uint64_t bytes = 0;        // their total size
};

class InstanceAllocations {
 public:
  // `memory` must outlive this object. `limit_bytes` caps the live total (0: no cap).
  InstanceAllocations(ProtectedMemory& memory, std::uint64_t limit_bytes)
      : memory_(memory), limit_bytes_(limit_bytes) {}
  ~InstanceAllocations() { revokeAll(); }
  InstanceAllocations(const InstanceAllocations&) = delete;
  InstanceAllocations& operator=(const InstanceAllocations&) = delete;

  int allocate(std::uint64_t bytes, std::uint64_t* device_address);
  int free(std::uint64_t device_address);
  int write(std::uint64_t device_address, const void* src, std::uint64_t bytes);
  int read(std::uint64_t device_address, void* dst, std::uint64_t bytes);

  // Frees every live allocation (revocation at teardown) and reports what it freed.
  RevocationReport revokeAll();

  // Whether a live allocation starts exactly at `device_address`.
  bool ownsStart(std::uint64_t device_address) const { return live_.count(device_address) != 0; }

  std::uint64_t liveAllocations() const { return live_.size(); }
  std::uint64_t liveBytes() const { return live_bytes_; }

 private:
  // 0 if [address, address + bytes) lies inside one live allocation, else EPERM/ERANGE.
  int checkRange(std::uint64_t address, std::uint64_t bytes) const;

  ProtectedMemory& memory_;
  const std::uint64_t limit_bytes_;
  std::map<std::uint64_t, std::uint64_t> live_;  // start address -> size
  std::uint64_t live_bytes_ = 0;
};

}  // namespace agileos::modules
