// HostAllocations: page-locked host memory handed out by cudaMallocHost and
// cudaHostAlloc (untrusted side).
//
// Until the shared-memory transport lands, such memory is ordinary anonymous
// memory of the client, locked with mlock where the limit allows; copies from it
// travel like any host copy. Mapped (device-visible) host memory is not offered.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace agileos::client {

class HostAllocations {
 public:
  static HostAllocations& instance();

  void* allocate(std::size_t size, unsigned flags);
  // Frees the allocation whose base is exactly p; false if p is not one.
  bool free(void* p);
  // The flags of the allocation containing p.
  std::optional<unsigned> flagsOf(const void* p) const;

 private:
  struct Entry {
    std::size_t size;
    std::size_t mappedSize;
    unsigned flags;
  };
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Entry> entries_;
};

}  // namespace agileos::client
