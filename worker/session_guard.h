// SessionGuard: the kernel memory guard as it applies to one client (paper V-E).
//
// The daemon admits a policy per client and sends it with the attach. Except under
// trap, the client's guarded kernels count their hits in a .u64 in protected memory
// (the "guard page", allocated for the client in the module range the first time a
// module is guarded); poison and sink redirect hits into the quarantine on the same
// page, remap_or into the user range. The worker reads the count after each
// synchronising call that follows a launch:
//   - poison: a new hit fails that call with cudaErrorIllegalAddress, and every later
//     call of the client fails the same way (as a faulting kernel's context would),
//     while the context and any other client of it go on;
//   - report, sink, remap_or: new hits are logged (with "not enforced" for report);
//   - trap needs no state: the access faults in the fault window, the context is lost, the call fails, the
//     worker reports itself tainted and is retired once the client has gone.
//
// Guard page layout (kGuardPageBytes, one granule): [0, 8) hit count; the quarantine at
// [kSinkOffset, kSinkOffset + kRedirectLimit). The count lies outside the quarantine,
// so redirected writes cannot reset it (ptx::validate checks that).
//
// Test hook: a worker started with --test-guard-canary also gives each client a canary,
// a protected granule filled with 0xA5, that GuardStatus reports (address, intact), so
// the escape suite can aim at protected memory and check from outside that nothing
// reached it.
//
// Thread-safety: the state is created under `mutex`; the flags are atomics. The guard
// page is freed with the session's other protected memory (releaseProtected).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "memmgr/address_layout.h"
#include "worker/module_guard.h"

namespace agileos::worker {

inline constexpr std::uint64_t kGuardPageBytes = 2ull << 20;
inline constexpr std::uint64_t kSinkOffset = 64ull << 10;
inline constexpr std::uint64_t kRedirectLimit = 256ull << 10;
// remap_or sends a hit to the first 2 MiB of the user range: (a & mask) | base.
inline constexpr std::uint64_t kRemapMask = (2ull << 20) - 1;
inline constexpr std::uint8_t kCanaryByte = 0xA5;

// The guard options of a client with `policy` whose guard page is at `page` (0 under
// trap, which needs none): the layout above. The one place it is spelled out; the guard
// benchmark uses it too, so it measures exactly what the worker loads.
inline ptx::GuardOptions guardOptionsFor(ptx::GuardPolicy policy, memmgr::DevicePtr page) {
  ptx::GuardOptions o;
  o.policy = policy;
  o.protectedBegin = memmgr::kIoAperture.begin;
  o.protectedEnd = memmgr::kModuleRange.end();
  o.faultWindow = memmgr::kGuardFaultWindow.begin;
  o.redirectLimit = kRedirectLimit;
  o.remapBase = memmgr::kUserRange.begin;
  o.remapMask = kRemapMask;
  if (page != 0) {
    o.hitCounter = page;
    o.sink = page + kSinkOffset;
  }
  return o;
}

struct SessionGuard {
  GuardConfig setting;  // from the attach; never changed afterwards (read without the lock)

  std::mutex mutex;               // guards the state below
  memmgr::DevicePtr page = 0;     // the guard page (the options derive from it: guardOptionsFor)
  CUstream readStream = nullptr;  // non-blocking: reading the count waits for nothing else
  memmgr::DevicePtr canary = 0;
  // Written under the mutex; atomic so that the worker's usage report reads it without the mutex,
  // which a hit-count read holds across a device copy.
  std::atomic<std::uint64_t> hitsSeen{0};

  bool applied = false;           // a module was guarded (under the mutex)
  bool notAppliedLogged = false;  // (under the mutex)

  std::atomic<bool> launched{false};  // a kernel ran since the count was last read
  std::atomic<bool> poisoned{false};
  // Unguarded code was loaded (logged once); the mark that matters is the memory manager's
  // (MemoryManager::admitUnguardedCode), which refuses the client protected state from then on.
  std::atomic<bool> unguardedCodeLogged{false};
};

class CompiledModuleCache;

// What the whole worker contributes to the guard: the compiled-module cache (may be
// null) and the escape suite's test hook.
struct WorkerGuardContext {
  CompiledModuleCache* cache = nullptr;
  bool testCanary = false;
};

}  // namespace agileos::worker
