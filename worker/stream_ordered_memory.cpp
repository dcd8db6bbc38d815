#include "worker/stream_ordered_memory.h"

#include <algorithm>

namespace agileos::worker {

bool StreamOrderedMemory::poolExists(std::uint64_t pool) const {
  std::lock_guard lock(mutex_);
  return pools_.contains(pool);
}

std::uint64_t StreamOrderedMemory::createPool(std::uint64_t maxBytes) {
  std::lock_guard lock(mutex_);
  if (pools_.size() > kMaxPools) return 0;
  const std::uint64_t pool = nextPool_++;
  PoolState state;
  state.maxBytes = maxBytes;
  pools_.emplace(pool, std::move(state));
  return pool;
}

bool StreamOrderedMemory::fits(std::uint64_t pool, std::uint64_t size) const {
  std::lock_guard lock(mutex_);
  auto state = pools_.find(pool);
  if (state == pools_.end()) return false;
  if (state->second.maxBytes == 0) return true;
  const std::uint64_t held = state->second.reservedBytes();
  return held <= state->second.maxBytes && size <= state->second.maxBytes - held;
}

void StreamOrderedMemory::releaseCachedAbove(PoolState& state, std::uint64_t keep,
                                             std::vector<memmgr::DevicePtr>* release) {
  while (state.cachedBytes > keep && !state.cached.empty()) {
    auto largest = std::prev(state.cached.end());
    state.cachedBytes -= largest->first;
    release->push_back(largest->second);
    state.cached.erase(largest);
  }
}

bool StreamOrderedMemory::destroyPool(std::uint64_t pool, std::vector<memmgr::DevicePtr>* release) {
  std::lock_guard lock(mutex_);
  if (pool == kDefaultPool) return false;
  auto state = pools_.find(pool);
  if (state == pools_.end()) return false;
  releaseCachedAbove(state->second, 0, release);
  pools_.erase(state);
  // Its live allocations and pending frees stay the client's; they no longer count anywhere.
  for (auto& [base, allocation] : live_) {
    if (allocation.pool == pool) allocation.pool = 0;
  }
  for (PendingFree& free : pending_) {
    if (free.allocation.pool == pool) free.allocation.pool = 0;
  }
  return true;
}

void StreamOrderedMemory::setReleaseThreshold(std::uint64_t pool, std::uint64_t bytes,
                                              std::vector<memmgr::DevicePtr>* release) {
  std::lock_guard lock(mutex_);
  auto state = pools_.find(pool);
  if (state == pools_.end()) return;
  state->second.releaseThreshold = bytes;
  releaseCachedAbove(state->second, bytes, release);
}

void StreamOrderedMemory::raiseHighs(PoolState& state) {
  state.usedHigh = std::max(state.usedHigh, state.usedBytes());
  state.reservedHigh = std::max(state.reservedHigh, state.reservedBytes());
}

memmgr::DevicePtr StreamOrderedMemory::takeCached(std::uint64_t pool, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  auto state = pools_.find(pool);
  if (state == pools_.end()) return 0;
  auto cached = state->second.cached.find(size);
  if (cached == state->second.cached.end()) return 0;
  const memmgr::DevicePtr base = cached->second;
  state->second.cached.erase(cached);
  state->second.cachedBytes -= size;
  state->second.liveBytes += size;
  live_[base] = Allocation{pool, size};
  raiseHighs(state->second);
  return base;
}

void StreamOrderedMemory::noteAllocated(std::uint64_t pool, memmgr::DevicePtr base, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  auto state = pools_.find(pool);
  live_[base] = Allocation{state == pools_.end() ? 0 : pool, size};
  if (state != pools_.end()) {
    state->second.liveBytes += size;
    raiseHighs(state->second);
  }
}

bool StreamOrderedMemory::isFreed(memmgr::DevicePtr base) const {
  std::lock_guard lock(mutex_);
  if (std::any_of(pending_.begin(), pending_.end(), [base](const PendingFree& f) { return f.base == base; }))
    return true;
  for (const auto& [id, state] : pools_) {
    for (const auto& [size, cached] : state.cached) {
      if (cached == base) return true;
    }
  }
  return false;
}

void StreamOrderedMemory::notePendingFree(memmgr::DevicePtr base, CUevent event, std::uint64_t streamToken) {
  std::lock_guard lock(mutex_);
  Allocation allocation;
  if (auto it = live_.find(base); it != live_.end()) {
    allocation = it->second;
    live_.erase(it);
  }
  if (auto state = pools_.find(allocation.pool); allocation.pool != 0 && state != pools_.end()) {
    state->second.liveBytes -= allocation.size;
    state->second.pendingBytes += allocation.size;
  }
  pending_.push_back(PendingFree{base, allocation, event, streamToken});
}

void StreamOrderedMemory::forgetAllocation(memmgr::DevicePtr base) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(base);
  if (it == live_.end()) return;
  if (auto state = pools_.find(it->second.pool); it->second.pool != 0 && state != pools_.end()) {
    state->second.liveBytes -= it->second.size;
  }
  live_.erase(it);
}

memmgr::DevicePtr StreamOrderedMemory::takePendingOnStream(GpuBackend& gpu, std::uint64_t pool,
                                                           std::uint64_t size, std::uint64_t streamToken) {
  CUevent event = nullptr;
  memmgr::DevicePtr base = 0;
  {
    std::lock_guard lock(mutex_);
    auto state = pools_.find(pool);
    if (state == pools_.end()) return 0;
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const PendingFree& f) {
      return f.streamToken == streamToken && f.allocation.pool == pool && f.allocation.size == size;
    });
    if (it == pending_.end()) return 0;
    base = it->base;
    event = it->event;
    state->second.pendingBytes -= size;
    state->second.liveBytes += size;
    live_[base] = it->allocation;
    raiseHighs(state->second);
    pending_.erase(it);
  }
  gpu.eventDestroy(event);
  return base;
}

bool StreamOrderedMemory::waitForPendingFrees(GpuBackend& gpu) {
  std::vector<CUevent> events;
  {
    std::lock_guard lock(mutex_);
    for (const PendingFree& free : pending_) events.push_back(free.event);
  }
  // Waited for outside the lock; the events stay owned by the list (only this exclusive call of
  // the client can take them meanwhile).
  bool ok = true;
  for (CUevent event : events) ok = gpu.eventSynchronize(event) == CUDA_SUCCESS && ok;
  return ok;
}

std::vector<memmgr::DevicePtr> StreamOrderedMemory::takeCompletedFrees(GpuBackend& gpu) {
  std::vector<PendingFree> done;
  std::vector<memmgr::DevicePtr> release;
  {
    std::lock_guard lock(mutex_);
    if (pending_.empty()) return {};
    // Queried under the lock: a query never blocks, and a free must not be taken twice.
    auto completed = std::stable_partition(pending_.begin(), pending_.end(), [&gpu](const PendingFree& f) {
      return gpu.eventQuery(f.event) != CUDA_SUCCESS;
    });
    done.assign(std::make_move_iterator(completed), std::make_move_iterator(pending_.end()));
    pending_.erase(completed, pending_.end());
    for (const PendingFree& free : done) {
      auto state = pools_.find(free.allocation.pool);
      if (free.allocation.pool == 0 || state == pools_.end()) {
        release.push_back(free.base);
        continue;
      }
      PoolState& pool = state->second;
      pool.pendingBytes -= free.allocation.size;
      if (pool.cachedBytes + free.allocation.size <= pool.releaseThreshold) {
        pool.cached.emplace(free.allocation.size, free.base);
        pool.cachedBytes += free.allocation.size;
      } else {
        release.push_back(free.base);
      }
    }
  }
  for (const PendingFree& free : done) gpu.eventDestroy(free.event);
  return release;
}

std::vector<memmgr::DevicePtr> StreamOrderedMemory::trim(std::uint64_t pool, std::uint64_t minBytesToKeep) {
  std::lock_guard lock(mutex_);
  std::vector<memmgr::DevicePtr> release;
  auto state = pools_.find(pool);
  if (state == pools_.end()) return release;
  const std::uint64_t used = state->second.usedBytes();
  releaseCachedAbove(state->second, minBytesToKeep > used ? minBytesToKeep - used : 0, &release);
  return release;
}

std::vector<memmgr::DevicePtr> StreamOrderedMemory::takeAllCached() {
  std::lock_guard lock(mutex_);
  std::vector<memmgr::DevicePtr> release;
  for (auto& [id, state] : pools_) releaseCachedAbove(state, 0, &release);
  return release;
}

StreamOrderedMemory::Usage StreamOrderedMemory::usage(std::uint64_t pool) const {
  std::lock_guard lock(mutex_);
  auto state = pools_.find(pool);
  if (state == pools_.end()) return {};
  // A free not yet run still uses its memory (CUDA counts it until the free runs in stream order).
  return Usage{state->second.usedBytes(), state->second.usedHigh, state->second.reservedBytes(),
               state->second.reservedHigh};
}

void StreamOrderedMemory::resetUsedHigh(std::uint64_t pool) {
  std::lock_guard lock(mutex_);
  if (auto state = pools_.find(pool); state != pools_.end())
    state->second.usedHigh = state->second.usedBytes();
}

void StreamOrderedMemory::resetReservedHigh(std::uint64_t pool) {
  std::lock_guard lock(mutex_);
  if (auto state = pools_.find(pool); state != pools_.end()) {
    state->second.reservedHigh = state->second.reservedBytes();
  }
}

void StreamOrderedMemory::dropAll(GpuBackend& gpu) {
  std::vector<PendingFree> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(pending_);
    live_.clear();
    pools_.clear();
    pools_.emplace(kDefaultPool, PoolState{});
  }
  for (const PendingFree& free : pending) gpu.eventDestroy(free.event);
}

}  // namespace agileos::worker
