// HostAllocations: page-locked host memory handed out by cudaMallocHost and
// cudaHostAlloc (untrusted side).
//
// Over the shared-memory transport such memory is a segment the worker shares
// with this process (HostAlloc: a sealed memfd the worker has registered with the
// GPU), so a copy from or to it is one DMA by the worker with no staging; copies
// name it by segment and offset (sharedRange()). Over gRPC it is ordinary
// anonymous memory of the client, locked with mlock where the limit allows, and
// copies from it travel like any host copy. Mapped (device-visible) host memory
// (cudaHostAllocMapped) is a shared segment the worker has also mapped for the device, placed
// like managed memory (below) at one address for this process and the device where this process
// has that address free; over gRPC it is not offered (cudaErrorNotSupported).
//
// Registered memory (cudaHostRegister, shared-memory transport only): the program's own pages
// are moved into such a segment, mapped for the device (client/session/page_swap.h), at the
// program's own address; unregistering moves them back into private pages. The device's address
// of registered memory is the worker's (cudaHostGetDevicePointer), not the program's.
//
// Managed memory (cudaMallocManaged, shared-memory transport only): a segment the worker placed
// in its managed window and mapped for the device at the same address, which this process maps
// at that address too, so one pointer serves the host and kernels. The device reaches it over
// the bus: nothing migrates, prefetch and advice are hints with nothing to do.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "client/session/managed_hint_pages.h"

namespace agileos::client {

// Where a host range lies in memory shared with the worker.
struct SharedHostRange {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
};

class HostAllocations {
 public:
  static HostAllocations& instance();

  enum class Kind { kAllocated, kRegistered, kManaged };

  // size > 0. Returns cudaSuccess with *p set, or the error.
  cudaError_t allocate(std::size_t size, unsigned flags, void** p);
  // Frees the allocation (cudaHostAlloc's only) whose base is exactly p (waiting for the device
  // first when it is shared with the worker, as cudaFreeHost does). cudaErrorInvalidValue if p
  // is not one.
  cudaError_t free(void* p);

  // cudaHostRegister: flags are cudaHostRegister* bits the caller has checked (Portable, Mapped);
  // the memory is always mapped for the device. cudaErrorNotSupported without shared memory,
  // cudaErrorHostMemoryAlreadyRegistered when a page of the range is already shared
  // (registered, or page-locked memory of this session), cudaErrorInvalidValue when the pages
  // are not the program's private anonymous memory.
  cudaError_t registerRange(void* p, std::size_t size, unsigned flags);
  // cudaHostUnregister of exactly the pointer registered: cudaErrorHostMemoryNotRegistered
  // otherwise. The memory stays valid with its contents (private again).
  cudaError_t unregister(void* p);

  // cudaMallocManaged (size > 0): *p is both the host's and the device's address.
  cudaError_t allocateManaged(std::size_t size, unsigned flags, void** p);
  // Frees the managed allocation whose base is exactly p (after the device is idle, as cudaFree).
  // cudaErrorInvalidValue when p is not one, or is a __managed__ variable's.
  cudaError_t freeManaged(void* p);
  // A __managed__ variable's memory (ModuleRegistry): managed memory like cudaMallocManaged's
  // that the worker fills with the variable's initial bytes and names in the module's code; it
  // goes with the module (forgetManagedVariable), never through cudaFree.
  cudaError_t allocateManagedVariable(std::uint64_t module, const std::string& name, std::size_t size,
                                      void** p);
  // The module went (the worker freed the segment with it): the memory is no longer managed
  // memory of the session (its mapping stays, see the definition).
  void forgetManagedVariable(void* p);
  // Whether all of [p, p+bytes) lies in one managed allocation (bytes 0: p itself).
  bool isManaged(const void* p, std::uint64_t bytes = 0) const;
  // Whether p is the start of a managed allocation.
  bool isManagedBase(const void* p) const;
  // Whether the session holds any managed memory (allocations or __managed__ variables).
  bool holdsManaged() const;
  // The program's hints for its managed memory (managed_hints.h): `change` is applied to every
  // page that [p, p+bytes) touches, or the hints every such page shares are read. False (nothing
  // done) unless bytes > 0 and the range lies in one managed allocation.
  bool adviseManaged(const void* p, std::uint64_t bytes, const std::function<void(PageHints&)>& change);
  bool managedHints(const void* p, std::uint64_t bytes, PageHints* common) const;

  // The kind of memory containing p, if it is this session's page-locked, registered or managed.
  std::optional<Kind> kindOf(const void* p) const;
  // The flags of the allocation or registration containing p, as CUDA reports them: the
  // program's, plus cudaHostAllocMapped (= cudaHostRegisterMapped) where the memory is mapped for
  // the device, which over shared memory all of it is (natively, under unified addressing, every
  // page-locked allocation and registration is mapped, and cudaHostGetFlags says so).
  std::optional<unsigned> flagsOf(const void* p) const;
  // The program's address of [device, device+bytes) when that range, named by its device address,
  // lies in one of this session's host segments mapped for the device (page-locked, registered or
  // managed memory): where the device's address differs from the program's
  // (cudaHostGetDevicePointer), and where it is the same.
  std::optional<void*> hostAddressOfDeviceRange(std::uint64_t device, std::uint64_t bytes) const;
  // The device's address of p when p lies in memory mapped for the device.
  std::optional<std::uint64_t> deviceAddressOf(const void* p) const;
  // The shared segment holding all of [p, p+bytes), if one does.
  std::optional<SharedHostRange> sharedRange(const void* p, std::uint64_t bytes) const;

 private:
  // Keyed by the address the program was given (or registered). Invariant: the key ranges
  // [key, key+size) are disjoint, and so are the page ranges their segments are mapped over.
  struct Entry {
    std::size_t size;
    std::size_t mappedSize;
    unsigned flags;
    std::uint64_t segment;        // 0: private to this process
    std::uint64_t deviceAddress;  // of the segment's start, when mapped for the device; else 0
    Kind kind = Kind::kAllocated;
    std::size_t segmentOffset = 0;  // of the key in its segment (registered: key - its page)
    bool moduleVariable = false;    // kManaged: a __managed__ variable's, freed with its module
  };
  // Removes and returns the entry whose key is exactly p, if it is of `kind`.
  std::optional<Entry> take(void* p, Kind kind);
  // Whether an entry's pages meet [pageStart, pageEnd); the caller holds mutex_.
  bool pagesInUse(std::uintptr_t pageStart, std::uintptr_t pageEnd) const;
  struct Found {
    Entry entry;
    std::uint64_t offset;  // of the address from the allocation's base
  };
  // The allocation holding p; the caller holds mutex_.
  std::optional<Found> containing(const void* p) const;
  struct ManagedRange {
    std::uintptr_t base;   // the managed allocation's key
    std::uint64_t offset;  // of p in it
  };
  // Where [p, p+bytes) lies when it is non-empty and within one managed allocation; the caller
  // holds mutex_.
  std::optional<ManagedRange> managedRange(const void* p, std::uint64_t bytes) const;

  mutable std::mutex mutex_;
  std::mutex registerMutex_;  // held across a registration (never inside mutex_)
  std::map<std::uintptr_t, Entry> entries_;
  // Hints of managed allocations, by the allocation's key; dropped with the entry.
  std::map<std::uintptr_t, ManagedHints> hints_;
};

}  // namespace agileos::client
