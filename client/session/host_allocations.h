// HostAllocations: page-locked host memory handed out by cudaMallocHost and
// cudaHostAlloc (untrusted side).
//
// Over the shared-memory transport such memory is a segment the worker shares
// with this process (HostAlloc: a sealed memfd the worker has registered with the
// GPU), so a copy from or to it is one DMA by the worker with no staging; copies
// name it by segment and offset (sharedRange()). Over gRPC it is ordinary
// anonymous memory of the client, locked with mlock where the limit allows, and
// copies from it travel like any host copy. Mapped (device-visible) host memory
// (cudaHostAllocMapped) is a shared segment the worker has also mapped for the device;
// over gRPC it is not offered (cudaErrorNotSupported).
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace agileos::client {

// Where a host range lies in memory shared with the worker.
struct SharedHostRange {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
};

class HostAllocations {
 public:
  static HostAllocations& instance();

  // size > 0. Returns cudaSuccess with *p set, or the error.
  cudaError_t allocate(std::size_t size, unsigned flags, void** p);
  // Frees the allocation whose base is exactly p (waiting for the device first when it
  // is shared with the worker, as cudaFreeHost does). cudaErrorInvalidValue if p is not one.
  cudaError_t free(void* p);
  // The flags of the allocation containing p.
  std::optional<unsigned> flagsOf(const void* p) const;
  // The device's address of p when p lies in memory mapped for the device.
  std::optional<std::uint64_t> deviceAddressOf(const void* p) const;
  // The shared segment holding all of [p, p+bytes), if one does.
  std::optional<SharedHostRange> sharedRange(const void* p, std::uint64_t bytes) const;

 private:
  struct Entry {
    std::size_t size;
    std::size_t mappedSize;
    unsigned flags;
    std::uint64_t segment;        // 0: private to this process
    std::uint64_t deviceAddress;  // of the base, when mapped for the device; else 0
  };
  struct Found {
    Entry entry;
    std::uint64_t offset;  // of the address from the allocation's base
  };
  // The allocation holding p; the caller holds mutex_.
  std::optional<Found> containing(const void* p) const;

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Entry> entries_;
};

}  // namespace agileos::client
