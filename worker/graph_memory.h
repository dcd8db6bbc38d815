// GraphMemory: one client's graph allocations (CUDA graph memory nodes, and cudaMallocAsync
// captured into a graph), as the worker keeps them, and where their physical memory goes.
//
// As natively, an allocation node's address is fixed when the node is added (the client asks for
// a reservation then: address space only), and physical memory is bound to it only when a launch
// runs the node. Physical memory comes in blocks of the client's (memmgr "graph blocks"), which
// allocations whose lifetimes do not overlap share, as the driver's graph memory pool does:
// - activate (the allocation node runs on a stream): the reservation is bound to a block no live
//   allocation holds, and the reservation becomes live (its table entry passes the checks). A
//   block may serve when the work queued before its last free has finished, or when that free was
//   on the same stream (stream order then runs this launch's work after it); the block mapped at
//   the reservation already is preferred, so a relaunch maps nothing. Failing that, a new block
//   is made, charged to the client's quota.
// - deactivate (a free node, cudaFreeAsync or cudaFree): not live; the block is free for others
//   from an event recorded on the free's stream (none after cudaFree's synchronize).
// - trim (cudaDeviceGraphMemTrim): blocks no live allocation holds are unmapped everywhere and
//   given back.
// - release (the last graph holding the node is destroyed): the address space goes (at once when
//   not live, else at its free); its block stays for others until a trim.
// So the attributes are the driver's: used = bytes of blocks mapped at some reservation, reserved
// = bytes of all blocks (cudaDeviceGetGraphMemAttribute), rounded to the granularity like
// physical memory.
//
// Safety: a block or a reservation's mapping is taken away (unmapped, given back) only after the
// context is synchronized (GraphBacking::synchronize), so no queued work of the client still uses
// it; a block is only ever mapped at this client's reservations, so sharing one between
// allocations shows one allocation's leftovers to the same client only (as natively).
//
// Invariants: every reservation here has a memmgr graph reservation of the same client at the same
// base, mapped to `block` (0: none) and kGraphLive exactly when `live`; a `released` reservation
// is live (one that is not is given back at once); a block's `holder` is the one live reservation
// bound to it (0: none); `mappings` counts the reservations whose `block` it is.
// Thread-safety: every member is safe to call concurrently (one mutex, held across the backing's
// calls, which never call back); the handlers that change liveness run exclusively within their
// client (Exclusivity::kInvalidates).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "memmgr/memory_manager.h"

namespace agileos::worker {

// What GraphMemory asks of the memory manager and the GPU, for its client
// (worker/handlers/graph_memory_handlers.cpp; tests fake it).
class GraphBacking {
 public:
  virtual ~GraphBacking() = default;
  virtual CUresult createBlock(std::uint64_t size, std::uint64_t* block) = 0;
  virtual CUresult destroyBlock(std::uint64_t block) = 0;
  virtual CUresult map(memmgr::DevicePtr reservation, std::uint64_t block) = 0;
  virtual CUresult unmap(memmgr::DevicePtr reservation) = 0;
  virtual CUresult freeReservation(memmgr::DevicePtr reservation) = 0;
  virtual bool setLive(memmgr::DevicePtr reservation, bool live) = 0;
  // Waits until no work queued so far may use the client's memory.
  virtual CUresult synchronize() = 0;
  // Whether the work before `event` has finished (never waits).
  virtual bool completed(CUevent event) = 0;
  virtual void destroyEvent(CUevent event) = 0;
};

class GraphMemory {
 public:
  // At most this many reservations, and as many blocks, per client (each is a few words; the quota
  // bounds the memory).
  static constexpr std::size_t kMaxReservations = 1 << 16;

  struct Usage {
    std::uint64_t usedBytes = 0;
    std::uint64_t usedHigh = 0;
    std::uint64_t reservedBytes = 0;
    std::uint64_t reservedHigh = 0;
  };

  enum class Outcome {
    kDone,
    kUnknown,     // not the base of a reservation of this client
    kWrongState,  // live where it must not be, or the other way round
    kFailed,      // the backing failed (*failure says how); nothing changed for the client
  };

  ~GraphMemory();  // events still held are leaked, not destroyed: dropEvents comes first

  bool full() const;
  // A new reservation whose address space spans `span` bytes (the size asked for is the memory
  // manager's table entry's), not live.
  void noteReserved(memmgr::DevicePtr base, std::uint64_t span);
  bool isReservation(memmgr::DevicePtr base) const;
  bool isLive(memmgr::DevicePtr base) const;
  // Not live -> live, bound to a block, for work on the stream `stream` (an identity, never reused).
  Outcome activate(GraphBacking& backing, memmgr::DevicePtr base, std::uint64_t stream, CUresult* failure);
  // Live -> not live. `event` (owned from here on; null: the context was synchronized) follows the
  // last work that may use the allocation, on the stream `stream`. A reservation released meanwhile
  // is given back.
  Outcome deactivate(GraphBacking& backing, memmgr::DevicePtr base, CUevent event, std::uint64_t stream,
                     CUresult* failure);
  // No graph of the client holds the reservation any more: given back now when it is not live,
  // else at its deactivation.
  Outcome release(GraphBacking& backing, memmgr::DevicePtr base, CUresult* failure);
  // cudaDeviceGraphMemTrim: blocks no live allocation holds are unmapped and given back.
  CUresult trim(GraphBacking& backing);

  Usage usage() const;
  // Attribute writes of the high-water marks: CUDA allows only 0, which resets a mark to the
  // current value.
  void resetUsedHigh();
  void resetReservedHigh();
  // Destroys the events of the blocks' last frees (before the client's streams and events go, at a
  // device reset or teardown, once the context is synchronized).
  void dropEvents(const std::function<void(CUevent)>& destroy);
  // At cudaDeviceReset and at teardown, after the memory manager released the client's memory.
  void clear();

 private:
  struct Reservation {
    std::uint64_t span = 0;
    std::uint64_t block = 0;
    bool live = false;
    bool released = false;
  };
  struct Block {
    std::uint64_t size = 0;
    memmgr::DevicePtr holder = 0;
    std::uint64_t mappings = 0;
    CUevent freedAfter = nullptr;  // the last free's event; null: no work of it is pending
    std::uint64_t freedOn = 0;     // the stream of that free
  };

  // The following run with mutex_ held.
  bool mayServe(GraphBacking& backing, Block& block, std::uint64_t span, std::uint64_t stream);
  // The reservation (not live) loses its mapping; the context is synchronized already.
  CUresult unmapLocked(GraphBacking& backing, memmgr::DevicePtr base, Reservation& reservation);
  CUresult bindNewBlock(GraphBacking& backing, memmgr::DevicePtr base, Reservation& reservation);
  CUresult trimLocked(GraphBacking& backing);
  // The reservation (not live) goes: its address space back, its mapping with it, after a context
  // synchronize when `waitFirst` (work queued before may still use it).
  CUresult giveBackLocked(GraphBacking& backing, std::map<memmgr::DevicePtr, Reservation>::iterator it,
                          bool waitFirst);
  void setFreeEvent(GraphBacking& backing, Block& block, CUevent event, std::uint64_t stream);
  void recount();  // usage_ from the blocks, and the high-water marks

  mutable std::mutex mutex_;
  std::map<memmgr::DevicePtr, Reservation> reservations_;
  std::map<std::uint64_t, Block> blocks_;
  Usage usage_;
};

}  // namespace agileos::worker
