#include "memmgr/chunk_suballocator.h"

#include <algorithm>
#include <bit>
#include <iterator>

namespace agileos::memmgr {

ChunkSuballocator::ChunkSuballocator(std::uint64_t chunkBytes, std::size_t emptyChunksCachedPerClient)
    : chunkBytes_(chunkBytes), emptyChunksCachedPerClient_(emptyChunksCachedPerClient) {}

std::uint64_t ChunkSuballocator::sizeClassFor(std::uint64_t size) {
  return std::bit_ceil(std::max(size, kSmallestSizeClass));
}

DevicePtr ChunkSuballocator::Chunk::takeFreeSlot() {
  std::uint32_t index;
  if (!recycled.empty()) {
    index = recycled.back();
    recycled.pop_back();
  } else {
    index = firstNeverUsed++;
  }
  live[index] = true;
  ++liveSlots;
  return range.va + std::uint64_t{index} * slotBytes;
}

void ChunkSuballocator::formatForSizeClass(Chunk& chunk, std::uint64_t slotBytes) {
  chunk.slotBytes = slotBytes;
  chunk.slotCount = static_cast<std::uint32_t>(chunkBytes_ / slotBytes);
  chunk.firstNeverUsed = 0;
  chunk.recycled.clear();
  chunk.live.assign(chunk.slotCount, false);
  chunk.liveSlots = 0;
}

std::optional<DevicePtr> ChunkSuballocator::takeSlot(ClientId client, std::uint64_t size) {
  if (!serves(size)) return std::nullopt;
  auto owner = clients_.find(client);
  if (owner == clients_.end()) return std::nullopt;
  ClientChunks& mine = owner->second;
  const std::uint64_t slotBytes = sizeClassFor(size);

  std::set<DevicePtr>& roomy = mine.withFreeSlot[slotBytes];
  if (roomy.empty()) {
    if (mine.cachedEmpty.empty()) return std::nullopt;
    const DevicePtr base = mine.cachedEmpty.back();
    mine.cachedEmpty.pop_back();
    formatForSizeClass(chunks_.at(base), slotBytes);
    roomy.insert(base);
  }
  // The lowest chunk first, so that higher chunks tend to empty and can be given back.
  Chunk& chunk = chunks_.at(*roomy.begin());
  const DevicePtr slot = chunk.takeFreeSlot();
  if (!chunk.hasFreeSlot()) roomy.erase(roomy.begin());
  return slot;
}

void ChunkSuballocator::adoptEmptyChunk(ClientId client, const BackedRange& chunk) {
  Chunk adopted;
  adopted.range = chunk;
  adopted.owner = client;
  chunks_.emplace(chunk.va, std::move(adopted));
  ClientChunks& mine = clients_[client];
  mine.bases.insert(chunk.va);
  mine.cachedEmpty.push_back(chunk.va);
}

std::optional<BackedRange> ChunkSuballocator::chunkOf(ClientId client, DevicePtr p) const {
  auto after = chunks_.upper_bound(p);
  if (after == chunks_.begin()) return std::nullopt;
  const Chunk& chunk = std::prev(after)->second;
  if (chunk.owner != client || p - chunk.range.va >= chunk.range.size) return std::nullopt;
  return chunk.range;
}

bool ChunkSuballocator::releaseSlot(ClientId client, DevicePtr p, std::optional<BackedRange>* emptiedChunk) {
  emptiedChunk->reset();
  auto after = chunks_.upper_bound(p);
  if (after == chunks_.begin()) return false;
  auto it = std::prev(after);
  Chunk& chunk = it->second;
  const std::uint64_t offset = p - chunk.range.va;
  if (chunk.owner != client || chunk.slotBytes == 0 || offset >= chunk.range.size) return false;
  if (offset % chunk.slotBytes != 0) return false;
  const auto index = static_cast<std::uint32_t>(offset / chunk.slotBytes);
  if (!chunk.live[index]) return false;

  ClientChunks& mine = clients_.at(client);
  std::set<DevicePtr>& roomy = mine.withFreeSlot[chunk.slotBytes];
  chunk.live[index] = false;
  chunk.recycled.push_back(index);
  --chunk.liveSlots;
  if (chunk.liveSlots > 0) {
    roomy.insert(chunk.range.va);
    return true;
  }

  roomy.erase(chunk.range.va);
  if (mine.cachedEmpty.size() < emptyChunksCachedPerClient_) {
    chunk.slotBytes = 0;
    chunk.recycled.clear();
    chunk.live.clear();
    mine.cachedEmpty.push_back(chunk.range.va);
    return true;
  }
  *emptiedChunk = chunk.range;
  mine.bases.erase(chunk.range.va);
  if (mine.bases.empty()) clients_.erase(client);
  chunks_.erase(it);
  return true;
}

std::vector<BackedRange> ChunkSuballocator::removeChunks(const std::vector<DevicePtr>& bases) {
  std::vector<BackedRange> removed;
  removed.reserve(bases.size());
  for (DevicePtr base : bases) {
    auto it = chunks_.find(base);
    removed.push_back(it->second.range);
    chunks_.erase(it);
  }
  return removed;
}

std::vector<BackedRange> ChunkSuballocator::takeChunksOf(ClientId client) {
  auto owner = clients_.find(client);
  if (owner == clients_.end()) return {};
  const std::vector<DevicePtr> bases(owner->second.bases.begin(), owner->second.bases.end());
  clients_.erase(owner);
  return removeChunks(bases);
}

std::vector<BackedRange> ChunkSuballocator::takeCachedChunks() {
  std::vector<DevicePtr> bases;
  for (auto it = clients_.begin(); it != clients_.end();) {
    ClientChunks& mine = it->second;
    for (DevicePtr base : mine.cachedEmpty) {
      bases.push_back(base);
      mine.bases.erase(base);
    }
    mine.cachedEmpty.clear();
    it = mine.bases.empty() ? clients_.erase(it) : std::next(it);
  }
  return removeChunks(bases);
}

std::vector<BackedRange> ChunkSuballocator::takeCachedChunksOf(ClientId client) {
  auto owner = clients_.find(client);
  if (owner == clients_.end()) return {};
  ClientChunks& mine = owner->second;
  std::vector<DevicePtr> bases(mine.cachedEmpty.begin(), mine.cachedEmpty.end());
  for (DevicePtr base : bases) mine.bases.erase(base);
  mine.cachedEmpty.clear();
  if (mine.bases.empty()) clients_.erase(owner);
  return removeChunks(bases);
}

std::vector<BackedRange> ChunkSuballocator::takeAllChunks() {
  std::vector<BackedRange> removed;
  removed.reserve(chunks_.size());
  for (const auto& [base, chunk] : chunks_) removed.push_back(chunk.range);
  chunks_.clear();
  clients_.clear();
  return removed;
}

std::uint64_t ChunkSuballocator::bytesHeldBy(ClientId client) const {
  auto owner = clients_.find(client);
  return owner == clients_.end() ? 0 : owner->second.bases.size() * chunkBytes_;
}

std::size_t ChunkSuballocator::cachedChunkCount(ClientId client) const {
  auto owner = clients_.find(client);
  return owner == clients_.end() ? 0 : owner->second.cachedEmpty.size();
}

}  // namespace agileos::memmgr
