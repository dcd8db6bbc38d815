// ChunkSuballocator: bookkeeping for small allocations carved out of chunks.
//
// A chunk is one BackedRange of chunkBytes. It belongs to exactly one client for
// its whole life (so no two clients ever share a physical page) and, while in use,
// to one size class: a power of two from kSmallestSizeClass, the slot size every
// request up to that size gets. Slots are at least 256-byte aligned: chunk bases
// are granularity-aligned and every slot size is a multiple of 256.
//
// Empty chunks: when a chunk's last slot is freed it is kept in its owner's cache
// of empty chunks (at most emptyChunksCachedPerClient), ready for any size class
// of the same client, so a malloc/free loop does not map and unmap 2 MiB each
// time. Once the cache is full, further emptied chunks are handed back to the
// caller to destroy (which scrubs them). A cached chunk is never given to another
// client; it is scrubbed when it is finally destroyed, like every range.
//
// This class maps nothing and calls no backend: the MemoryManager creates and
// destroys the chunks' BackedRanges and tells this class about them.
// Thread-safety: none; the owner serializes calls (MemoryManager holds its mutex).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "memmgr/address_layout.h"
#include "memmgr/mapping_lifecycle.h"

namespace agileos::memmgr {

inline constexpr std::uint64_t kSmallestSizeClass = 256;

class ChunkSuballocator {
 public:
  // `chunkBytes` must be a power of two >= kSmallestSizeClass.
  ChunkSuballocator(std::uint64_t chunkBytes, std::size_t emptyChunksCachedPerClient);

  // The slot size serving a request of `size` bytes: the next power of two >= max(size, 256).
  static std::uint64_t sizeClassFor(std::uint64_t size);
  // Whether a request of `size` bytes (> 0) fits one slot of a chunk.
  bool serves(std::uint64_t size) const { return size > 0 && sizeClassFor(size) <= chunkBytes_; }

  // A free slot for `size` bytes (serves(size) must hold) from one of `client`'s
  // chunks of that size class (lowest address first), else from one of its cached
  // empty chunks. nullopt: the client needs a new chunk (see adoptEmptyChunk).
  std::optional<DevicePtr> takeSlot(ClientId client, std::uint64_t size);

  // Adopts a freshly created chunk (chunk.size == chunkBytes) into `client`'s empty
  // chunks; the next takeSlot for that client will use it.
  void adoptEmptyChunk(ClientId client, const BackedRange& chunk);

  // Gives back the live slot at `p` of `client`. Returns false, changing nothing, if
  // p is not the start of a live slot in one of that client's chunks. When the chunk becomes empty
  // and the client's cache is full, the chunk leaves this class and is stored in
  // *emptiedChunk for the caller to destroy; otherwise *emptiedChunk is reset.
  bool releaseSlot(ClientId client, DevicePtr p, std::optional<BackedRange>* emptiedChunk);

  // Removes and returns every chunk of `client`, in use or cached.
  std::vector<BackedRange> takeChunksOf(ClientId client);
  // Removes and returns every cached empty chunk of every client (to relieve memory pressure).
  std::vector<BackedRange> takeCachedChunks();
  // The same for one client's cached empty chunks only.
  std::vector<BackedRange> takeCachedChunksOf(ClientId client);
  // Removes and returns every chunk.
  std::vector<BackedRange> takeAllChunks();

  // The chunk of `client` holding p, or nullopt.
  std::optional<BackedRange> chunkOf(ClientId client, DevicePtr p) const;

  std::uint64_t chunkBytes() const { return chunkBytes_; }
  // Physical bytes held in chunks for `client`, including its cached empty chunks.
  std::uint64_t bytesHeldBy(ClientId client) const;
  std::size_t chunkCount() const { return chunks_.size(); }
  std::size_t cachedChunkCount(ClientId client) const;

 private:
  struct Chunk {
    BackedRange range;
    ClientId owner = 0;
    std::uint64_t slotBytes = 0;  // 0 while the chunk is empty and cached
    std::uint32_t slotCount = 0;
    std::uint32_t firstNeverUsed = 0;     // slots [firstNeverUsed, slotCount) have never been handed out
    std::vector<std::uint32_t> recycled;  // freed slots below firstNeverUsed
    std::vector<bool> live;               // per slot: handed out and not yet released
    std::uint32_t liveSlots = 0;

    bool hasFreeSlot() const { return !recycled.empty() || firstNeverUsed < slotCount; }
    DevicePtr takeFreeSlot();  // precondition: hasFreeSlot()
  };
  struct ClientChunks {
    std::set<DevicePtr> bases;                                  // every chunk of the client
    std::map<std::uint64_t, std::set<DevicePtr>> withFreeSlot;  // slot size -> in-use chunks with room
    std::vector<DevicePtr> cachedEmpty;
  };

  void formatForSizeClass(Chunk& chunk, std::uint64_t slotBytes);
  std::vector<BackedRange> removeChunks(const std::vector<DevicePtr>& bases);

  std::uint64_t chunkBytes_;
  std::size_t emptyChunksCachedPerClient_;
  std::map<DevicePtr, Chunk> chunks_;  // by base
  std::unordered_map<ClientId, ClientChunks> clients_;
};

}  // namespace agileos::memmgr
