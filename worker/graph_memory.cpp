#include "worker/graph_memory.h"

#include <algorithm>

namespace agileos::worker {

GraphMemory::~GraphMemory() = default;

bool GraphMemory::full() const {
  std::lock_guard lock(mutex_);
  return reservations_.size() >= kMaxReservations;
}

void GraphMemory::noteReserved(memmgr::DevicePtr base, std::uint64_t span) {
  std::lock_guard lock(mutex_);
  reservations_[base] = Reservation{span, 0, false, false};
}

bool GraphMemory::isReservation(memmgr::DevicePtr base) const {
  std::lock_guard lock(mutex_);
  return reservations_.contains(base);
}

bool GraphMemory::isLive(memmgr::DevicePtr base) const {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  return it != reservations_.end() && it->second.live;
}

bool GraphMemory::mayServe(GraphBacking& backing, Block& block, std::uint64_t span, std::uint64_t stream) {
  if (block.holder != 0 || block.size < span) return false;
  if (block.freedAfter == nullptr || block.freedOn == stream) return true;
  if (!backing.completed(block.freedAfter)) return false;
  setFreeEvent(backing, block, nullptr, 0);
  return true;
}

void GraphMemory::setFreeEvent(GraphBacking& backing, Block& block, CUevent event, std::uint64_t stream) {
  if (block.freedAfter != nullptr) backing.destroyEvent(block.freedAfter);
  block.freedAfter = event;
  block.freedOn = stream;
}

CUresult GraphMemory::unmapLocked(GraphBacking& backing, memmgr::DevicePtr base, Reservation& reservation) {
  if (CUresult result = backing.unmap(base); result != CUDA_SUCCESS) return result;
  --blocks_.at(reservation.block).mappings;
  reservation.block = 0;
  return CUDA_SUCCESS;
}

CUresult GraphMemory::bindNewBlock(GraphBacking& backing, memmgr::DevicePtr base, Reservation& reservation) {
  if (blocks_.size() >= kMaxReservations) return CUDA_ERROR_OUT_OF_MEMORY;
  std::uint64_t id = 0;
  CUresult result = backing.createBlock(reservation.span, &id);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    // The blocks no allocation holds go first, as the driver's pool gives back what it caches.
    if (CUresult trimmed = trimLocked(backing); trimmed != CUDA_SUCCESS) return trimmed;
    result = backing.createBlock(reservation.span, &id);
  }
  if (result != CUDA_SUCCESS) return result;
  blocks_.emplace(id, Block{reservation.span, 0, 0, nullptr, 0});
  if (result = backing.map(base, id); result != CUDA_SUCCESS) {
    backing.destroyBlock(id);
    blocks_.erase(id);
    return result;
  }
  ++blocks_.at(id).mappings;
  reservation.block = id;
  return CUDA_SUCCESS;
}

GraphMemory::Outcome GraphMemory::activate(GraphBacking& backing, memmgr::DevicePtr base,
                                           std::uint64_t stream, CUresult* failure) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end()) return Outcome::kUnknown;
  Reservation& reservation = it->second;
  // A released reservation is live (a released one that is not is gone), so this also refuses
  // making a released reservation live again.
  if (reservation.live) return Outcome::kWrongState;
  auto fail = [&](CUresult result) {
    *failure = result;
    return Outcome::kFailed;
  };
  if (reservation.block != 0) {
    Block& own = blocks_.at(reservation.block);
    if (!mayServe(backing, own, reservation.span, stream)) {
      // Free but last freed on another stream whose work may still run (the graph was launched
      // there before: natively a graph's launches run one after another), or held by another live
      // allocation, so that this one moves. Either way nothing may be unmapped, or bound, under
      // queued work.
      if (CUresult result = backing.synchronize(); result != CUDA_SUCCESS) return fail(result);
      if (own.holder == 0) {
        setFreeEvent(backing, own, nullptr, 0);
      } else if (CUresult result = unmapLocked(backing, base, reservation); result != CUDA_SUCCESS) {
        return fail(result);
      }
    }
  }
  if (reservation.block == 0) {
    // The smallest free block that may serve; else a new one.
    Block* best = nullptr;
    std::uint64_t bestId = 0;
    for (auto& [id, block] : blocks_) {
      if (mayServe(backing, block, reservation.span, stream) &&
          (best == nullptr || block.size < best->size)) {
        best = &block;
        bestId = id;
      }
    }
    if (best != nullptr) {
      if (CUresult result = backing.map(base, bestId); result != CUDA_SUCCESS) return fail(result);
      ++best->mappings;
      reservation.block = bestId;
    } else if (CUresult result = bindNewBlock(backing, base, reservation); result != CUDA_SUCCESS) {
      recount();  // a trim may have changed the counts
      return fail(result);
    }
  }
  if (!backing.setLive(base, true)) return fail(CUDA_ERROR_UNKNOWN);  // unreachable: mapped, not live
  blocks_.at(reservation.block).holder = base;
  reservation.live = true;
  recount();
  return Outcome::kDone;
}

GraphMemory::Outcome GraphMemory::deactivate(GraphBacking& backing, memmgr::DevicePtr base, CUevent event,
                                             std::uint64_t stream, CUresult* failure) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || !it->second.live) {
    if (event != nullptr) backing.destroyEvent(event);
    return it == reservations_.end() ? Outcome::kUnknown : Outcome::kWrongState;
  }
  Reservation& reservation = it->second;
  backing.setLive(base, false);
  reservation.live = false;
  Block& block = blocks_.at(reservation.block);
  block.holder = 0;
  setFreeEvent(backing, block, event, stream);
  if (!reservation.released) return Outcome::kDone;
  // Released while live: it goes now, once no queued work may use it.
  if (CUresult result = giveBackLocked(backing, it, event != nullptr); result != CUDA_SUCCESS) {
    *failure = result;
    return Outcome::kFailed;
  }
  return Outcome::kDone;
}

GraphMemory::Outcome GraphMemory::release(GraphBacking& backing, memmgr::DevicePtr base, CUresult* failure) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second.released) return Outcome::kUnknown;
  Reservation& reservation = it->second;
  if (reservation.live) {
    reservation.released = true;
    return Outcome::kDone;  // it goes at its free
  }
  // A reservation that ever had memory mapped may still be used by queued work (a graph destroyed
  // after its launches; never on the path of a launch that keeps its graph).
  if (CUresult result = giveBackLocked(backing, it, reservation.block != 0); result != CUDA_SUCCESS) {
    *failure = result;
    return Outcome::kFailed;
  }
  return Outcome::kDone;
}

CUresult GraphMemory::giveBackLocked(GraphBacking& backing,
                                     std::map<memmgr::DevicePtr, Reservation>::iterator it, bool waitFirst) {
  // On a failure the reservation stays as it is: never unmapped under work that may still use it,
  // its address space is reserved until the session ends.
  if (waitFirst) {
    if (CUresult result = backing.synchronize(); result != CUDA_SUCCESS) return result;
  }
  if (CUresult result = backing.freeReservation(it->first); result != CUDA_SUCCESS) return result;
  if (it->second.block != 0) --blocks_.at(it->second.block).mappings;
  reservations_.erase(it);
  recount();
  return CUDA_SUCCESS;
}

CUresult GraphMemory::trim(GraphBacking& backing) {
  std::lock_guard lock(mutex_);
  const CUresult result = trimLocked(backing);
  recount();
  return result;
}

CUresult GraphMemory::trimLocked(GraphBacking& backing) {
  const bool anyFree =
      std::any_of(blocks_.begin(), blocks_.end(), [](const auto& entry) { return entry.second.holder == 0; });
  if (!anyFree) return CUDA_SUCCESS;
  if (CUresult result = backing.synchronize(); result != CUDA_SUCCESS) return result;
  for (auto& [base, reservation] : reservations_) {
    if (reservation.block == 0 || blocks_.at(reservation.block).holder != 0) continue;
    if (CUresult result = unmapLocked(backing, base, reservation); result != CUDA_SUCCESS) return result;
  }
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (it->second.holder != 0 || it->second.mappings != 0) {
      ++it;
      continue;
    }
    setFreeEvent(backing, it->second, nullptr, 0);
    if (CUresult result = backing.destroyBlock(it->first); result != CUDA_SUCCESS) return result;
    it = blocks_.erase(it);
  }
  return CUDA_SUCCESS;
}

GraphMemory::Usage GraphMemory::usage() const {
  std::lock_guard lock(mutex_);
  return usage_;
}

void GraphMemory::resetUsedHigh() {
  std::lock_guard lock(mutex_);
  usage_.usedHigh = usage_.usedBytes;
}

void GraphMemory::resetReservedHigh() {
  std::lock_guard lock(mutex_);
  usage_.reservedHigh = usage_.reservedBytes;
}

void GraphMemory::dropEvents(const std::function<void(CUevent)>& destroy) {
  std::lock_guard lock(mutex_);
  for (auto& [id, block] : blocks_) {
    if (block.freedAfter != nullptr) destroy(block.freedAfter);
    block.freedAfter = nullptr;
    block.freedOn = 0;
  }
}

void GraphMemory::clear() {
  std::lock_guard lock(mutex_);
  reservations_.clear();
  blocks_.clear();
  recount();
}

void GraphMemory::recount() {
  usage_.usedBytes = 0;
  usage_.reservedBytes = 0;
  for (const auto& [id, block] : blocks_) {
    usage_.reservedBytes += block.size;
    if (block.mappings != 0) usage_.usedBytes += block.size;
  }
  usage_.usedHigh = std::max(usage_.usedHigh, usage_.usedBytes);
  usage_.reservedHigh = std::max(usage_.reservedHigh, usage_.reservedBytes);
}

}  // namespace agileos::worker
