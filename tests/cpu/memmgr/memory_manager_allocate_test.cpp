// allocate(): placement, size classes, alignment, chunk sharing, large mappings, exhaustion.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "memmgr/chunk_suballocator.h"
#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

using MemoryManagerAllocate = MemoryManagerTest;

TEST_F(MemoryManagerAllocate, ZeroBytesGivesNullWithoutTouchingTheDriver) {
  const std::uint64_t calls = fake.callCount();
  DevicePtr p = 0xdead;
  EXPECT_EQ(manager->allocate(kAlice, 0, &p), CUDA_SUCCESS);
  EXPECT_EQ(p, 0u);
  EXPECT_EQ(fake.callCount(), calls);
  EXPECT_EQ(manager->allocate(kAlice, 16, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryManagerAllocate, SmallSizesAreAlignedMappedAndRecordedAsRequested) {
  for (std::uint64_t size :
       std::initializer_list<std::uint64_t>{1, 255, 256, 257, 1000, 4096, 65537, kSmallAllocationLimit - 1}) {
    const DevicePtr p = allocate(kAlice, size);
    EXPECT_EQ(p % kAllocationAlignment, 0u) << size;
    EXPECT_EQ(p % ChunkSuballocator::sizeClassFor(size), 0u) << size;
    EXPECT_EQ(classify(p), RegionKind::kUser) << size;
    EXPECT_TRUE(fake.isMappedAndAccessible(p, size)) << size;
    const auto entry = manager->table().find(p);
    ASSERT_TRUE(entry) << size;
    EXPECT_EQ(entry->base, p);
    EXPECT_EQ(entry->size, size);  // the request, not the slot
    EXPECT_EQ(entry->kind, AllocationKind::kUser);
    EXPECT_EQ(manager->check(kAlice, p, size), PointerCheck::kOk) << size;
    EXPECT_EQ(manager->check(kAlice, p, size + 1), PointerCheck::kOutOfBounds) << size;
  }
}

TEST_F(MemoryManagerAllocate, SmallAllocationsOfOneClassShareAChunk) {
  std::set<DevicePtr> pointers;
  for (std::uint64_t i = 0; i < kChunk / 256; ++i) pointers.insert(allocate(kAlice, 200));
  EXPECT_EQ(pointers.size(), kChunk / 256);
  EXPECT_EQ(fake.liveHandles(), 1u);
  EXPECT_EQ(*pointers.rbegin() - *pointers.begin(), kChunk - 256);  // the chunk, densely packed
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk);
  EXPECT_EQ(manager->table().bytesOwnedBy(kAlice), 200 * (kChunk / 256));

  allocate(kAlice, 200);  // the chunk is full
  EXPECT_EQ(fake.liveHandles(), 2u);
  allocate(kAlice, 300);  // another size class
  EXPECT_EQ(fake.liveHandles(), 3u);
}

TEST_F(MemoryManagerAllocate, ClientsNeverShareAChunk) {
  const DevicePtr alice = allocate(kAlice, 64);
  const DevicePtr bob = allocate(kBob, 64);
  EXPECT_EQ(fake.liveHandles(), 2u);
  EXPECT_NE(alice / kChunk, bob / kChunk);
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk);
  EXPECT_EQ(manager->bytesInUse(kBob), kChunk);
}

TEST_F(MemoryManagerAllocate, LargeAllocationsGetTheirOwnRoundedMapping) {
  const DevicePtr exact = allocate(kAlice, kSmallAllocationLimit);  // the limit itself is large
  EXPECT_EQ(fake.liveHandles(), 1u);
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk);
  const DevicePtr odd = allocate(kAlice, 3 * kMiB + 1);
  EXPECT_EQ(fake.liveHandles(), 2u);
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk + 4 * kMiB);
  EXPECT_EQ(exact % kChunk, 0u);
  EXPECT_EQ(odd % kChunk, 0u);
  EXPECT_TRUE(fake.isMappedAndAccessible(odd, 4 * kMiB));
  // Validation is by the requested size, though the mapping behind it is larger.
  EXPECT_EQ(manager->check(kAlice, odd, 3 * kMiB + 1), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kAlice, odd + 3 * kMiB, 2), PointerCheck::kOutOfBounds);
  EXPECT_EQ(manager->check(kAlice, odd + 3 * kMiB + 1, 1), PointerCheck::kUnknown);
}

TEST_F(MemoryManagerAllocate, MoreThanTheUserRangeIsOutOfMemoryAndChangesNothing) {
  const std::uint64_t calls = fake.callCount();
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kAlice, kUserRange.size + 1, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(manager->allocate(kAlice, UINT64_MAX, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(p, 0u);
  EXPECT_EQ(fake.callCount(), calls);
  EXPECT_EQ(manager->table().size(), 0u);
}

TEST_F(MemoryManagerAllocate, PhysicalExhaustionIsOutOfMemoryAndChangesNothing) {
  fake.setPhysicalCapacity(4 * kMiB);
  const DevicePtr all = allocate(kAlice, 4 * kMiB);
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kAlice, 16, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(manager->allocate(kBob, 2 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(manager->table().size(), 1u);
  EXPECT_EQ(fake.liveHandles(), 1u);
  EXPECT_EQ(manager->bytesInUse(kBob), 0u);
  ASSERT_EQ(manager->free(kAlice, all), CUDA_SUCCESS);
  EXPECT_EQ(manager->allocate(kBob, 2 * kMiB, &p), CUDA_SUCCESS);
}

TEST_F(MemoryManagerAllocate, VirtualExhaustionIsOutOfMemoryAndChangesNothing) {
  const DevicePtr everything = allocate(kAlice, kUserRange.size);  // the fake has no physical limit
  EXPECT_EQ(everything, kUserRange.begin);
  const std::uint64_t creates = fake.callCount(VmmCall::kCreatePhysical);
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kBob, 16, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake.callCount(VmmCall::kCreatePhysical), creates);
  ASSERT_EQ(manager->free(kAlice, everything), CUDA_SUCCESS);
  EXPECT_EQ(allocate(kBob, 16), kUserRange.begin);
}

TEST_F(MemoryManagerAllocate, FreedVirtualRangesAreReusedFirstFit) {
  const DevicePtr a = allocate(kAlice, 4 * kMiB);
  const DevicePtr b = allocate(kAlice, 2 * kMiB);
  ASSERT_EQ(manager->free(kAlice, a), CUDA_SUCCESS);
  EXPECT_EQ(allocate(kBob, 2 * kMiB), a);                 // first hole that fits
  EXPECT_EQ(allocate(kBob, 3 * kMiB), b + 2 * kMiB);      // the rest of the hole is too small
  EXPECT_EQ(allocate(kBob, 1 * kMiB + 1), a + 2 * kMiB);  // but this fits in it
}

TEST_F(MemoryManagerAllocate, EmptiedChunksAreCachedForTheSameClient) {
  const DevicePtr first = allocate(kAlice, 256);
  ASSERT_EQ(manager->free(kAlice, first), CUDA_SUCCESS);
  EXPECT_EQ(fake.liveMappings(), 1u);  // kept for Alice
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk);
  const std::uint64_t creates = fake.callCount(VmmCall::kCreatePhysical);
  const DevicePtr again = allocate(kAlice, 8192);  // any size class
  EXPECT_EQ(fake.callCount(VmmCall::kCreatePhysical), creates);
  EXPECT_EQ(again / kChunk, first / kChunk);
  // Bob never receives Alice's cached chunk.
  const DevicePtr bob = allocate(kBob, 8192);
  EXPECT_NE(bob / kChunk, first / kChunk);
}

TEST_F(MemoryManagerAllocate, ChunksBeyondTheCacheAreScrubbedAndGivenBack) {
  std::vector<DevicePtr> pointers;
  for (std::uint64_t i = 0; i < kEmptyChunksCachedPerClient + 2; ++i) {
    pointers.push_back(allocate(kAlice, 256u << i));  // one chunk per size class
  }
  ASSERT_EQ(fake.liveHandles(), kEmptyChunksCachedPerClient + 2);
  for (DevicePtr p : pointers) {
    ASSERT_TRUE(fake.write(p, 8));
    ASSERT_EQ(manager->free(kAlice, p), CUDA_SUCCESS);
  }
  EXPECT_EQ(fake.liveHandles(), kEmptyChunksCachedPerClient);
  EXPECT_EQ(manager->bytesInUse(kAlice), kEmptyChunksCachedPerClient * kChunk);
  EXPECT_EQ(fake.fills().size(), 2u);  // the two chunks given back
}

TEST_F(MemoryManagerAllocate, OutOfMemoryDropsCachedChunksAndRetries) {
  fake.setPhysicalCapacity(4 * kMiB);
  ASSERT_EQ(manager->free(kAlice, allocate(kAlice, 256)), CUDA_SUCCESS);  // Alice caches one chunk
  ASSERT_EQ(fake.physicalBytes(), 2 * kMiB);
  const DevicePtr bob = allocate(kBob, 4 * kMiB);
  EXPECT_NE(bob, 0u);
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
  EXPECT_EQ(fake.liveHandles(), 1u);
}

}  // namespace
}  // namespace agileos::memmgr::testing
