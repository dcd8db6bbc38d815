// MappingLifecycle: creates and destroys backed ranges (physical memory mapped
// read/write at a VA range) through a VmmBackend, all or nothing.
//
// Scrub policy (the one place it is implemented): every range is zero-filled
// before it is unmapped and its physical memory handed back to the driver. The
// CUDA documentation does not promise that cuMemCreate returns zeroed memory, so
// AgileOS does not rely on the driver to erase one client's data before another
// client (or another process) receives the same physical pages.
//
// Failure policy: create() undoes everything it did when a step fails. destroy()
// stops at the first failing backend step and keeps the rest as a "stranded"
// teardown: the range's VA is not returned to the allocator (nothing may be mapped
// over memory that might still be mapped), and retryStranded() resumes from the
// failed step. So a driver failure can strand memory but never hands it to anyone.
//
// Thread-safety: none; the owner serializes calls (MemoryManager holds its mutex).
#pragma once

#include <cstdint>
#include <vector>

#include "memmgr/va_range_allocator.h"
#include "memmgr/vmm_backend.h"

namespace agileos::memmgr {

// Physical memory of `size` bytes mapped read/write at [va, va+size).
struct BackedRange {
  DevicePtr va = 0;
  std::uint64_t size = 0;
  PhysicalHandle handle = 0;
  // The driver granted generic compression (create's `compressible` asked for it).
  bool compressed = false;
};

class MappingLifecycle {
 public:
  // Both must outlive this object. `exportable`: physical memory is created exportable as a
  // POSIX file descriptor (VmmBackend::createExportablePhysical).
  MappingLifecycle(VmmBackend& backend, VaRangeAllocator& addresses, bool exportable = false);

  // Takes `size` bytes (a non-zero multiple of the allocator's alignment) of VA,
  // creates physical memory, maps it and grants read/write access. Returns
  // CUDA_ERROR_OUT_OF_MEMORY when no VA range is free, else the failing backend
  // call's CUresult; on any failure nothing is left behind (or, if the undo itself
  // fails, it is stranded as described above). `compressible`: the memory is asked for with
  // generic compression (never exportable); out->compressed says whether the driver granted it.
  CUresult create(std::uint64_t size, BackedRange* out, bool compressible = false);

  // Scrubs, unmaps and releases a range made by create() and returns its VA.
  // Returns the first failing backend call's CUresult; the range is then stranded.
  CUresult destroy(const BackedRange& range);

  // Resumes every stranded teardown; returns how many are still stranded.
  std::size_t retryStranded();
  std::size_t strandedCount() const { return stranded_.size(); }

 private:
  enum class Step { kScrub, kUnmap, kReleasePhysical, kReturnAddress, kDone };
  struct Teardown {
    BackedRange range;
    Step next;
  };

  // Runs `teardown` from its next step; on failure leaves it at the failed step.
  CUresult run(Teardown& teardown);
  // run() that strands the teardown if it does not finish.
  CUresult runOrStrand(Teardown teardown);

  VmmBackend& backend_;
  VaRangeAllocator& addresses_;
  const bool exportable_;
  std::vector<Teardown> stranded_;
};

}  // namespace agileos::memmgr
