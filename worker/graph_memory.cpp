#include "worker/graph_memory.h"

#include <algorithm>

namespace agileos::worker {

bool GraphMemory::full() const {
  std::lock_guard lock(mutex_);
  return reservations_.size() >= kMaxReservations;
}

void GraphMemory::noteReserved(memmgr::DevicePtr base, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  reservations_[base] = Reservation{size, false, false, false};
  usage_.reservedBytes += size;
  raiseHighs();
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

GraphMemory::Outcome GraphMemory::activate(memmgr::DevicePtr base) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end()) return Outcome::kUnknown;
  // A released reservation is live (a released one that is not is gone), so this also refuses
  // making a released reservation live again.
  if (it->second.live) return Outcome::kWrongState;
  it->second.live = true;
  it->second.everLive = true;
  usage_.usedBytes += it->second.size;
  raiseHighs();
  return Outcome::kDone;
}

GraphMemory::Outcome GraphMemory::deactivate(memmgr::DevicePtr base) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end()) return Outcome::kUnknown;
  if (!it->second.live) return Outcome::kWrongState;
  it->second.live = false;
  usage_.usedBytes -= it->second.size;
  if (!it->second.released) return Outcome::kDone;
  usage_.reservedBytes -= it->second.size;
  reservations_.erase(it);
  return Outcome::kRelease;
}

GraphMemory::Outcome GraphMemory::release(memmgr::DevicePtr base, bool* everLive) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second.released) return Outcome::kUnknown;
  *everLive = it->second.everLive;
  if (it->second.live) {
    it->second.released = true;
    return Outcome::kDone;
  }
  usage_.reservedBytes -= it->second.size;
  reservations_.erase(it);
  return Outcome::kRelease;
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

void GraphMemory::clear() {
  std::lock_guard lock(mutex_);
  reservations_.clear();
  usage_.usedBytes = 0;
  usage_.reservedBytes = 0;
}

void GraphMemory::raiseHighs() {
  usage_.usedHigh = std::max(usage_.usedHigh, usage_.usedBytes);
  usage_.reservedHigh = std::max(usage_.reservedHigh, usage_.reservedBytes);
}

}  // namespace agileos::worker
