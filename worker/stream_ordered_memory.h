// StreamOrderedMemory: one client's stream-ordered allocations (cudaMallocAsync, cudaFreeAsync)
// and memory pools, as the worker keeps them.
//
// The memory itself is the memory manager's like any cudaMalloc: an allocation is made at once
// (the range is the client's from the call on, which stream order allows) and is checked,
// charged and released like every other. What this adds is the order of frees: a free is put on
// a pending list with an event recorded on its stream, and the range goes back to the memory
// manager only once that event has completed, so a range is never handed out again while work
// queued before the free may still use it. Completed frees are taken (the events queried, never
// waited for) by every stream-ordered call and by the calls that allocate or report free memory.
//
// A pool keeps completed frees of its own allocations, up to its release threshold, as cached
// ranges: the memory stays the client's (mapped, charged to its quota, still passing the checks,
// as a pool's reserved memory is natively) and a later allocation of the same size from the same
// pool takes it without a driver call. Above the threshold, and at a trim, cached ranges go back
// to the memory manager. A pool's used bytes are its live allocations plus its frees not yet run;
// its reserved bytes add the cached ranges.
//
// Invariants: an address is in at most one of `live_`, `pending_` and a pool's `cached`; each
// pending free owns its event until it completes or is dropped; a pool's cached bytes never exceed
// its release threshold. Thread-safety: every member is safe to call concurrently.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "memmgr/memory_manager.h"
#include "worker/backend/gpu_backend.h"

namespace agileos::worker {

class StreamOrderedMemory {
 public:
  // The default pool of the client's device; it always exists and cannot be destroyed.
  static constexpr std::uint64_t kDefaultPool = 1;
  // At most this many explicit pools per client (each is a few words; a bound, not a budget).
  static constexpr std::size_t kMaxPools = 1024;

  struct Usage {
    std::uint64_t usedBytes = 0;
    std::uint64_t usedHigh = 0;
    std::uint64_t reservedBytes = 0;
    std::uint64_t reservedHigh = 0;
  };

  bool poolExists(std::uint64_t pool) const;
  // A new explicit pool's id, or 0 when the client has kMaxPools already. maxBytes (0: no bound)
  // bounds the pool's reserved bytes.
  std::uint64_t createPool(std::uint64_t maxBytes);
  // True when `pool` may grow by `size` bytes under its maxBytes.
  bool fits(std::uint64_t pool, std::uint64_t size) const;
  // False for the default pool and for an id that is not a pool of this client. The pool's live
  // allocations stay valid; its cached ranges are returned, for the caller to give back.
  bool destroyPool(std::uint64_t pool, std::vector<memmgr::DevicePtr>* release);
  // The release threshold (cudaMemPoolAttrReleaseThreshold): cached bytes kept at most. Lowering
  // it returns the cached ranges above it, for the caller to give back.
  void setReleaseThreshold(std::uint64_t pool, std::uint64_t bytes, std::vector<memmgr::DevicePtr>* release);

  // A cached range of exactly `size` bytes of `pool`, now live again; 0 when there is none.
  memmgr::DevicePtr takeCached(std::uint64_t pool, std::uint64_t size);
  // Records an allocation just made by the memory manager for `pool`.
  void noteAllocated(std::uint64_t pool, memmgr::DevicePtr base, std::uint64_t size);
  // True when `base` was freed in stream order and is pending or cached: a second free of it is
  // refused.
  bool isFreed(memmgr::DevicePtr base) const;
  // Puts `base` on the pending list with `event` (recorded on the free's stream, `streamToken`);
  // the list owns the event from here on. `base` may be a cudaMalloc allocation (counted in no
  // pool).
  void notePendingFree(memmgr::DevicePtr base, CUevent event, std::uint64_t streamToken);
  // Stream-ordered reuse: a pending free of exactly `size` bytes of `pool`, freed on the stream
  // `streamToken` names, is live again for an allocation on that same stream (the work after the
  // allocation runs after the work before the free, as natively). Its event is destroyed. 0 when
  // there is none. Streams are told apart by their tokens, which are never reused: the driver may
  // give a new stream the handle of a destroyed one, whose work the new stream does not follow.
  memmgr::DevicePtr takePendingOnStream(GpuBackend& gpu, std::uint64_t pool, std::uint64_t size,
                                        std::uint64_t streamToken);
  // Waits for every pending free's event (when an allocation would otherwise fail for lack of
  // memory), so that the next takeCompletedFrees() takes them all. False if a wait failed.
  bool waitForPendingFrees(GpuBackend& gpu);
  // A plain cudaFree of a pool allocation: it leaves the pool's accounting at once.
  void forgetAllocation(memmgr::DevicePtr base);

  // Takes off the pending list every free whose event has completed and destroys those events;
  // each freed range is cached by its pool when the pool's threshold allows, else returned: the
  // caller gives those back to the memory manager (after what must end before the memory does,
  // such as a module's DMA registration). A free whose event reports an error stays pending (the
  // context is then lost, and the session's teardown drops it).
  std::vector<memmgr::DevicePtr> takeCompletedFrees(GpuBackend& gpu);
  // cudaMemPoolTrimTo: returns cached ranges until the pool reserves at most minBytesToKeep.
  std::vector<memmgr::DevicePtr> trim(std::uint64_t pool, std::uint64_t minBytesToKeep);
  // Every pool's cached ranges: when the client's memory runs out, they go before an allocation
  // fails.
  std::vector<memmgr::DevicePtr> takeAllCached();

  Usage usage(std::uint64_t pool) const;
  // Attribute writes of the high-water marks: CUDA allows only 0, which resets a mark to the
  // current value.
  void resetUsedHigh(std::uint64_t pool);
  void resetReservedHigh(std::uint64_t pool);

  // At cudaDeviceReset and at teardown, after the context was synchronized: destroys the pending
  // frees' events and forgets everything, explicit pools included (the memory itself is released
  // with the rest of the client's).
  void dropAll(GpuBackend& gpu);

 private:
  struct Allocation {
    std::uint64_t pool = 0;
    std::uint64_t size = 0;
  };
  struct PendingFree {
    memmgr::DevicePtr base = 0;
    Allocation allocation;  // pool 0: not a pool allocation
    CUevent event = nullptr;
    std::uint64_t streamToken = 0;  // the free's stream (0: the legacy stream)
  };
  struct PoolState {
    std::uint64_t liveBytes = 0;
    std::uint64_t pendingBytes = 0;
    std::uint64_t cachedBytes = 0;
    std::uint64_t usedHigh = 0;
    std::uint64_t reservedHigh = 0;
    std::uint64_t maxBytes = 0;  // 0: no bound
    std::uint64_t releaseThreshold = 0;
    std::multimap<std::uint64_t, memmgr::DevicePtr> cached;  // by size
    std::uint64_t usedBytes() const { return liveBytes + pendingBytes; }
    std::uint64_t reservedBytes() const { return liveBytes + pendingBytes + cachedBytes; }
  };
  // Takes cached ranges (largest first) until `keep` bytes or fewer stay cached; under mutex_.
  static void releaseCachedAbove(PoolState& state, std::uint64_t keep,
                                 std::vector<memmgr::DevicePtr>* release);
  void raiseHighs(PoolState& state);

  mutable std::mutex mutex_;
  std::uint64_t nextPool_ = kDefaultPool + 1;
  std::map<std::uint64_t, PoolState> pools_{{kDefaultPool, PoolState{}}};
  std::map<memmgr::DevicePtr, Allocation> live_;
  std::vector<PendingFree> pending_;
};

}  // namespace agileos::worker
