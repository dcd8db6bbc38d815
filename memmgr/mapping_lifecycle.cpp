#include "memmgr/mapping_lifecycle.h"

#include <optional>

namespace agileos::memmgr {

MappingLifecycle::MappingLifecycle(VmmBackend& backend, VaRangeAllocator& addresses, bool exportable)
    : backend_(backend), addresses_(addresses), exportable_(exportable) {}

CUresult MappingLifecycle::create(std::uint64_t size, BackedRange* out, bool compressible) {
  const std::optional<DevicePtr> va = addresses_.allocate(size);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;

  BackedRange range{*va, size, 0};
  CUresult result = compressible ? backend_.createCompressiblePhysical(size, &range.handle, &range.compressed)
                    : exportable_ ? backend_.createExportablePhysical(size, &range.handle)
                                  : backend_.createPhysical(size, &range.handle);
  // A driver or platform without POSIX-descriptor export still gets its memory: exports of it
  // will fail, nothing else changes.
  if (exportable_ && !compressible &&
      (result == CUDA_ERROR_NOT_SUPPORTED || result == CUDA_ERROR_INVALID_VALUE)) {
    result = backend_.createPhysical(size, &range.handle);
  }
  if (result != CUDA_SUCCESS) {
    runOrStrand({range, Step::kReturnAddress});
    return result;
  }
  result = backend_.map(range.va, size, range.handle);
  if (result != CUDA_SUCCESS) {
    runOrStrand({range, Step::kReleasePhysical});
    return result;
  }
  result = backend_.setAccess(range.va, size);
  if (result != CUDA_SUCCESS) {
    // Access was never granted, so nothing can have been written: no scrub needed.
    runOrStrand({range, Step::kUnmap});
    return result;
  }
  *out = range;
  return CUDA_SUCCESS;
}

CUresult MappingLifecycle::destroy(const BackedRange& range) { return runOrStrand({range, Step::kScrub}); }

CUresult MappingLifecycle::runOrStrand(Teardown teardown) {
  const CUresult result = run(teardown);
  if (teardown.next != Step::kDone) stranded_.push_back(teardown);
  return result;
}

CUresult MappingLifecycle::run(Teardown& teardown) {
  const BackedRange& range = teardown.range;
  for (;;) {
    switch (teardown.next) {
      case Step::kScrub:
        if (CUresult result = backend_.fill(range.va, 0, range.size); result != CUDA_SUCCESS) return result;
        teardown.next = Step::kUnmap;
        break;
      case Step::kUnmap:
        if (CUresult result = backend_.unmap(range.va, range.size); result != CUDA_SUCCESS) return result;
        teardown.next = Step::kReleasePhysical;
        break;
      case Step::kReleasePhysical:
        if (CUresult result = backend_.releasePhysical(range.handle); result != CUDA_SUCCESS) return result;
        teardown.next = Step::kReturnAddress;
        break;
      case Step::kReturnAddress:
        // Fails only if the range did not come from addresses_: a bug, not a driver
        // failure, and retrying cannot fix it, so the teardown ends either way.
        teardown.next = Step::kDone;
        return addresses_.release(range.va, range.size) ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
      case Step::kDone:
        return CUDA_SUCCESS;
    }
  }
}

std::size_t MappingLifecycle::retryStranded() {
  std::vector<Teardown> pending;
  pending.swap(stranded_);
  for (Teardown& teardown : pending) runOrStrand(teardown);
  return stranded_.size();
}

}  // namespace agileos::memmgr
