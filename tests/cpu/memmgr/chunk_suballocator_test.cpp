#include "memmgr/chunk_suballocator.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>

namespace agileos::memmgr {
namespace {

constexpr std::uint64_t kChunk = 2ull << 20;
constexpr ClientId kAlice = 1;
constexpr ClientId kBob = 2;

BackedRange chunkAt(std::uint64_t index) {
  return {kUserRange.begin + index * kChunk, kChunk, /*handle=*/100 + index};
}

TEST(ChunkSuballocator, SizeClassesArePowersOfTwoFrom256) {
  EXPECT_EQ(ChunkSuballocator::sizeClassFor(1), 256u);
  EXPECT_EQ(ChunkSuballocator::sizeClassFor(256), 256u);
  EXPECT_EQ(ChunkSuballocator::sizeClassFor(257), 512u);
  EXPECT_EQ(ChunkSuballocator::sizeClassFor(4000), 4096u);
  EXPECT_EQ(ChunkSuballocator::sizeClassFor((1u << 20) - 1), 1u << 20);
  ChunkSuballocator chunks(kChunk, 1);
  EXPECT_FALSE(chunks.serves(0));
  EXPECT_TRUE(chunks.serves(kChunk));
  EXPECT_FALSE(chunks.serves(kChunk + 1));
}

TEST(ChunkSuballocator, NeedsAChunkBeforeItCanServe) {
  ChunkSuballocator chunks(kChunk, 1);
  EXPECT_FALSE(chunks.takeSlot(kAlice, 100));
  chunks.adoptEmptyChunk(kAlice, chunkAt(0));
  EXPECT_FALSE(chunks.takeSlot(kBob, 100));  // Alice's chunk is not Bob's
  EXPECT_EQ(chunks.takeSlot(kAlice, 100), chunkAt(0).va);
}

TEST(ChunkSuballocator, OneChunkHoldsOneSizeClass) {
  ChunkSuballocator chunks(kChunk, 1);
  chunks.adoptEmptyChunk(kAlice, chunkAt(0));
  std::set<DevicePtr> slots;
  for (std::uint64_t i = 0; i < kChunk / 512; ++i) {
    const auto slot = chunks.takeSlot(kAlice, 300);
    ASSERT_TRUE(slot);
    EXPECT_EQ((*slot - chunkAt(0).va) % 512, 0u);
    slots.insert(*slot);
  }
  EXPECT_EQ(slots.size(), kChunk / 512);
  EXPECT_FALSE(chunks.takeSlot(kAlice, 300));  // full
  EXPECT_FALSE(chunks.takeSlot(kAlice, 256));  // another class needs another chunk
  chunks.adoptEmptyChunk(kAlice, chunkAt(1));
  EXPECT_EQ(chunks.takeSlot(kAlice, 256), chunkAt(1).va);
  EXPECT_EQ(chunks.bytesHeldBy(kAlice), 2 * kChunk);
}

TEST(ChunkSuballocator, ReleaseRefusesAnythingButALiveSlotOfTheOwner) {
  ChunkSuballocator chunks(kChunk, 1);
  chunks.adoptEmptyChunk(kAlice, chunkAt(0));
  const DevicePtr a = *chunks.takeSlot(kAlice, 1024);
  const DevicePtr b = *chunks.takeSlot(kAlice, 1024);
  std::optional<BackedRange> emptied;
  EXPECT_FALSE(chunks.releaseSlot(kBob, a, &emptied));
  EXPECT_FALSE(chunks.releaseSlot(kAlice, a + 256, &emptied));        // interior
  EXPECT_FALSE(chunks.releaseSlot(kAlice, b + 1024, &emptied));       // never handed out
  EXPECT_FALSE(chunks.releaseSlot(kAlice, chunkAt(5).va, &emptied));  // no chunk there
  EXPECT_TRUE(chunks.releaseSlot(kAlice, a, &emptied));
  EXPECT_FALSE(emptied);
  EXPECT_FALSE(chunks.releaseSlot(kAlice, a, &emptied));  // double release
  EXPECT_EQ(chunks.takeSlot(kAlice, 1024), a);            // freed slots are reused
}

TEST(ChunkSuballocator, EmptiedChunksAreCachedUpToTheLimitThenHandedBack) {
  ChunkSuballocator chunks(kChunk, 1);
  chunks.adoptEmptyChunk(kAlice, chunkAt(0));
  const DevicePtr small = *chunks.takeSlot(kAlice, 256);
  chunks.adoptEmptyChunk(kAlice, chunkAt(1));
  const DevicePtr big = *chunks.takeSlot(kAlice, 4096);

  std::optional<BackedRange> emptied;
  ASSERT_TRUE(chunks.releaseSlot(kAlice, small, &emptied));
  EXPECT_FALSE(emptied);  // cached
  EXPECT_EQ(chunks.cachedChunkCount(kAlice), 1u);
  ASSERT_TRUE(chunks.releaseSlot(kAlice, big, &emptied));
  ASSERT_TRUE(emptied);  // the cache is full
  EXPECT_EQ(emptied->va, chunkAt(1).va);
  EXPECT_EQ(emptied->handle, chunkAt(1).handle);
  EXPECT_EQ(chunks.chunkCount(), 1u);

  // The cached chunk serves any size class of its owner, and nobody else.
  EXPECT_FALSE(chunks.takeSlot(kBob, 8192));
  EXPECT_EQ(chunks.takeSlot(kAlice, 8192), chunkAt(0).va);
  EXPECT_EQ(chunks.cachedChunkCount(kAlice), 0u);
}

TEST(ChunkSuballocator, TakeChunksOfOneClientOrOfAllCaches) {
  ChunkSuballocator chunks(kChunk, 2);
  chunks.adoptEmptyChunk(kAlice, chunkAt(0));
  chunks.adoptEmptyChunk(kBob, chunkAt(1));
  chunks.adoptEmptyChunk(kBob, chunkAt(2));
  ASSERT_TRUE(chunks.takeSlot(kBob, 256));  // chunk 2 (last adopted) is now in use

  const auto cached = chunks.takeCachedChunks();
  ASSERT_EQ(cached.size(), 2u);
  EXPECT_EQ(chunks.bytesHeldBy(kAlice), 0u);
  EXPECT_EQ(chunks.bytesHeldBy(kBob), kChunk);

  const auto bobs = chunks.takeChunksOf(kBob);
  ASSERT_EQ(bobs.size(), 1u);
  EXPECT_EQ(bobs[0].va, chunkAt(2).va);
  EXPECT_EQ(chunks.chunkCount(), 0u);
  EXPECT_TRUE(chunks.takeChunksOf(kBob).empty());
}

}  // namespace
}  // namespace agileos::memmgr
