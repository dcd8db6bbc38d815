// Whether this test process can map host memory in the MMIO window (memmgr::kMmioWindow).
//
// Under AddressSanitizer the window lies inside ASan's reserved high shadow, so a
// MAP_FIXED_NOREPLACE mapping there fails with EEXIST; under ThreadSanitizer it lies in a range
// TSan keeps for itself, and its mmap interceptor aborts the process on such a mapping. Tests that
// map there (WorkerHostResources::mapIo) skip in those builds rather than probe, as a probe mmap
// would kill a TSan process.
#pragma once

#include <sys/mman.h>

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AGILEOS_TEST_MMIO_WINDOW_IS_SANITIZER_MEMORY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AGILEOS_TEST_MMIO_WINDOW_IS_SANITIZER_MEMORY 1
#endif
#endif

namespace agileos::worker::testing {

#ifdef AGILEOS_TEST_MMIO_WINDOW_IS_SANITIZER_MEMORY
inline constexpr bool kMmioWindowMappable = false;
#else
inline constexpr bool kMmioWindowMappable = true;
#endif

// True if nothing is mapped anywhere in [address, address + bytes) of this process: a
// MAP_FIXED_NOREPLACE mapping there succeeds (and is removed again).
inline bool addressRangeIsFree(std::uint64_t address, std::uint64_t bytes) {
  void* want = reinterpret_cast<void*>(address);
  void* got = ::mmap(want, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED) return false;
  ::munmap(got, bytes);
  return got == want;
}

}  // namespace agileos::worker::testing

// Skips the current test where the MMIO window cannot be mapped (see above).
#define AGILEOS_SKIP_WITHOUT_MMIO_WINDOW()                                                              \
  do {                                                                                                  \
    if (!::agileos::worker::testing::kMmioWindowMappable)                                               \
      GTEST_SKIP() << "the MMIO window is sanitizer memory in this build: I/O mappings cannot be made"; \
  } while (false)
