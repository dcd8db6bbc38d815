// The clients' virtual-memory API on the memory manager (memory_manager_vmm.cpp): reservations
// in the user range, physical allocations charged to the client, mappings that become table
// entries, and every refusal a forged or foreign argument gets. The fixture's teardown checks that
// nothing is left with the fake driver and that every page went back scrubbed.
#include <gtest/gtest.h>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

class VirtualMemoryTest : public MemoryManagerTest {
 protected:
  DevicePtr reserve(ClientId client, std::uint64_t size, std::uint64_t alignment = 0) {
    DevicePtr base = 0;
    EXPECT_EQ(manager->reserveAddress(client, size, alignment, &base), CUDA_SUCCESS);
    return base;
  }
  std::uint64_t create(ClientId client, std::uint64_t size) {
    std::uint64_t handle = 0;
    EXPECT_EQ(manager->createPhysical(client, size, &handle), CUDA_SUCCESS);
    return handle;
  }
};

TEST_F(VirtualMemoryTest, ReserveCreateMapUseUnmapReleaseFree) {
  const DevicePtr base = reserve(kAlice, 4 * kChunk);
  EXPECT_TRUE(kUserRange.contains(base));
  EXPECT_EQ(base % kChunk, 0u);
  EXPECT_EQ(manager->check(kAlice, base, 1), PointerCheck::kUnknown);  // reserved, not mapped
  const std::uint64_t handle = create(kAlice, 2 * kChunk);
  EXPECT_EQ(manager->chargedBytes(kAlice), 2 * kChunk);
  ASSERT_EQ(manager->mapPhysical(kAlice, base + kChunk, 2 * kChunk, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->check(kAlice, base + kChunk, 2 * kChunk), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kBob, base + kChunk, 1), PointerCheck::kForeign);
  EXPECT_TRUE(fake.write(base + kChunk, 64));  // a kernel writes through the client's mapping
  EXPECT_TRUE(manager->coversMappings(kAlice, base + kChunk, 2 * kChunk));
  EXPECT_FALSE(manager->coversMappings(kAlice, base, 3 * kChunk));
  std::uint64_t found = 0, size = 0;
  ASSERT_TRUE(manager->mappedAllocation(kAlice, base + kChunk + 100, &found, &size));
  EXPECT_EQ(found, handle);
  EXPECT_EQ(size, 2 * kChunk);
  EXPECT_EQ(manager->free(kAlice, base + kChunk), CUDA_ERROR_INVALID_VALUE);  // not cuMemFree's
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);          // still mapped: stays
  EXPECT_EQ(manager->chargedBytes(kAlice), 2 * kChunk);
  EXPECT_EQ(manager->check(kAlice, base + kChunk, 1), PointerCheck::kOk);
  EXPECT_EQ(manager->freeAddress(kAlice, base, 4 * kChunk), CUDA_ERROR_INVALID_VALUE);  // mapped in it
  ASSERT_EQ(manager->unmapRange(kAlice, base + kChunk, 2 * kChunk), CUDA_SUCCESS);
  EXPECT_EQ(manager->check(kAlice, base + kChunk, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->chargedBytes(kAlice), 0u);  // released and unmapped: given back, scrubbed
  EXPECT_EQ(fake.physicalBytes(), 0u);
  EXPECT_EQ(manager->freeAddress(kAlice, base, 4 * kChunk), CUDA_SUCCESS);
}

// cuMemCreate with generic compression: asked of the driver, which may or may not grant it; the
// memory is charged, mapped, scrubbed and given back like plain memory either way.
TEST_F(VirtualMemoryTest, CompressibleMemoryIsAskedForAndReportsWhatWasGranted) {
  for (const bool grants : {true, false}) {
    SCOPED_TRACE(grants ? "the driver grants compression" : "the driver does not");
    fake.setGrantsCompression(grants);
    const std::size_t requestsBefore = fake.compressibleRequests();
    const DevicePtr base = reserve(kAlice, 2 * kChunk);
    std::uint64_t handle = 0;
    bool compressed = !grants;
    ASSERT_EQ(manager->createPhysical(kAlice, 2 * kChunk, &handle, true, &compressed), CUDA_SUCCESS);
    EXPECT_EQ(compressed, grants);
    EXPECT_EQ(fake.compressibleRequests(), requestsBefore + 1);
    EXPECT_EQ(manager->chargedBytes(kAlice), 2 * kChunk);
    ASSERT_EQ(manager->mapPhysical(kAlice, base, 2 * kChunk, handle), CUDA_SUCCESS);
    EXPECT_TRUE(fake.write(base, 64));
    ASSERT_EQ(manager->unmapRange(kAlice, base, 2 * kChunk), CUDA_SUCCESS);
    ASSERT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);
    EXPECT_EQ(manager->chargedBytes(kAlice), 0u);
    EXPECT_EQ(fake.physicalBytes(), 0u);
    ASSERT_EQ(manager->freeAddress(kAlice, base, 2 * kChunk), CUDA_SUCCESS);
  }
}

// Compressible memory whose granularity the manager's does not divide could not map where plain
// memory maps: the memory is created plain and says so, and the driver is not asked.
TEST_F(VirtualMemoryTest, CompressionIsNotAskedForAtAGranularityThatWouldNotMap) {
  fake.setCompressibleGranularity(2 * kChunk);
  std::uint64_t handle = 0;
  bool compressed = true;
  ASSERT_EQ(manager->createPhysical(kAlice, 2 * kChunk, &handle, true, &compressed), CUDA_SUCCESS);
  EXPECT_FALSE(compressed);
  EXPECT_EQ(fake.compressibleRequests(), 0u);
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);
  // Off the granularity is refused as for plain memory.
  EXPECT_EQ(manager->createPhysical(kAlice, kChunk + 4096, &handle, true, &compressed),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(VirtualMemoryTest, OneAllocationMappedTwiceAndAdjacentMappingsUnmappedAsOneRun) {
  const DevicePtr base = reserve(kAlice, 4 * kChunk);
  const std::uint64_t first = create(kAlice, kChunk);
  const std::uint64_t second = create(kAlice, kChunk);
  ASSERT_EQ(manager->mapPhysical(kAlice, base, kChunk, first), CUDA_SUCCESS);
  ASSERT_EQ(manager->mapPhysical(kAlice, base + kChunk, kChunk, second), CUDA_SUCCESS);
  ASSERT_EQ(manager->mapPhysical(kAlice, base + 3 * kChunk, kChunk, first), CUDA_SUCCESS);  // an alias
  EXPECT_TRUE(manager->coversMappings(kAlice, base, 2 * kChunk));
  // Back to back, the two mappings are one range for copies; the gap after them ends it.
  EXPECT_EQ(manager->check(kAlice, base + kChunk - 64, 128), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kAlice, base + kChunk, kChunk + 1), PointerCheck::kOutOfBounds);
  EXPECT_EQ(manager->unmapRange(kAlice, base, kChunk + kChunk / 2), CUDA_ERROR_INVALID_VALUE);  // half
  EXPECT_EQ(manager->unmapRange(kAlice, base, 3 * kChunk), CUDA_ERROR_INVALID_VALUE);           // a gap
  EXPECT_EQ(manager->unmapRange(kAlice, base, 2 * kChunk), CUDA_SUCCESS);
  EXPECT_EQ(manager->releasePhysical(kAlice, first), CUDA_SUCCESS);
  EXPECT_EQ(manager->releasePhysical(kAlice, second), CUDA_SUCCESS);  // unmapped: goes now
  EXPECT_EQ(manager->chargedBytes(kAlice), kChunk);                   // `first` is still mapped
  EXPECT_EQ(manager->unmapRange(kAlice, base + 3 * kChunk, kChunk), CUDA_SUCCESS);
  EXPECT_EQ(manager->chargedBytes(kAlice), 0u);
  EXPECT_EQ(manager->freeAddress(kAlice, base, 4 * kChunk), CUDA_SUCCESS);
}

TEST_F(VirtualMemoryTest, ForgedAndForeignArgumentsChangeNothing) {
  const DevicePtr base = reserve(kAlice, 2 * kChunk);
  const std::uint64_t handle = create(kAlice, kChunk);
  const DevicePtr bobs = reserve(kBob, kChunk);
  // Bob cannot map, release or free what is Alice's, nor map into her reservation.
  EXPECT_EQ(manager->mapPhysical(kBob, bobs, kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->releasePhysical(kBob, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->freeAddress(kBob, base, 2 * kChunk), CUDA_ERROR_INVALID_VALUE);
  const std::uint64_t bobsHandle = create(kBob, kChunk);
  EXPECT_EQ(manager->mapPhysical(kBob, base, kChunk, bobsHandle), CUDA_ERROR_INVALID_VALUE);
  // Alice: outside her reservations, unaligned, larger than the allocation, a made-up handle,
  // over an existing mapping, a protected address.
  EXPECT_EQ(manager->mapPhysical(kAlice, bobs, kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->mapPhysical(kAlice, base + 256, kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->mapPhysical(kAlice, base, 2 * kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->mapPhysical(kAlice, base, kChunk, handle + 1000), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->mapPhysical(kAlice, base + kChunk, 2 * kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->mapPhysical(kAlice, kModuleRange.begin, kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(manager->mapPhysical(kAlice, base, kChunk, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->mapPhysical(kAlice, base, kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->unmapRange(kBob, base, kChunk), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->check(kAlice, base, kChunk), PointerCheck::kOk);
  // Sizes that are not multiples of the granularity, a released handle, a reservation's wrong size.
  DevicePtr ignored = 0;
  std::uint64_t ignoredHandle = 0;
  EXPECT_EQ(manager->reserveAddress(kAlice, kChunk + 1, 0, &ignored), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->reserveAddress(kAlice, kChunk, 3 * kChunk, &ignored), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->createPhysical(kAlice, 100, &ignoredHandle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->freeAddress(kAlice, base, kChunk), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_ERROR_INVALID_VALUE);  // twice
  EXPECT_EQ(manager->mapPhysical(kAlice, base + kChunk, kChunk, handle), CUDA_ERROR_INVALID_VALUE);
  // Bob's session ends: his memory goes, Alice's stays.
  manager->releaseClient(kBob);
  EXPECT_EQ(manager->chargedBytes(kBob), 0u);
  EXPECT_EQ(manager->check(kAlice, base, kChunk), PointerCheck::kOk);
}

TEST_F(VirtualMemoryTest, ARetainedHandleNeedsOneMoreRelease) {
  const DevicePtr base = reserve(kAlice, kChunk);
  const std::uint64_t handle = create(kAlice, kChunk);
  std::uint64_t retained = 0;
  EXPECT_EQ(manager->retainPhysical(kAlice, base, &retained), CUDA_ERROR_INVALID_VALUE);  // not mapped yet
  ASSERT_EQ(manager->mapPhysical(kAlice, base, kChunk, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->retainPhysical(kBob, base + 64, &retained), CUDA_ERROR_INVALID_VALUE);  // not Bob's
  ASSERT_EQ(manager->retainPhysical(kAlice, base + 64, &retained), CUDA_SUCCESS);
  EXPECT_EQ(retained, handle);
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);  // the retain's reference
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->check(kAlice, base, kChunk), PointerCheck::kOk);  // still mapped
  // Released to none while mapped: a retain through the mapping makes the handle valid again.
  ASSERT_EQ(manager->retainPhysical(kAlice, base, &retained), CUDA_SUCCESS);
  ASSERT_EQ(manager->unmapRange(kAlice, base, kChunk), CUDA_SUCCESS);
  EXPECT_EQ(manager->chargedBytes(kAlice), kChunk);  // the retain keeps it
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->chargedBytes(kAlice), 0u);
  EXPECT_EQ(manager->freeAddress(kAlice, base, kChunk), CUDA_SUCCESS);
}

TEST_F(VirtualMemoryTest, AlignedReservationsAndThePerClientCap) {
  const DevicePtr aligned = reserve(kAlice, kChunk, 16 * kChunk);
  EXPECT_EQ(aligned % (16 * kChunk), 0u);
  DevicePtr base = 0;
  EXPECT_EQ(manager->reserveAddress(kAlice, kMaxReservedBytesPerClient, 0, &base), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(manager->reserveAddress(kAlice, kMaxReservedBytesPerClient - kChunk, 0, &base), CUDA_SUCCESS);
  EXPECT_EQ(manager->reserveAddress(kBob, kChunk, 0, &base), CUDA_SUCCESS);  // Bob has his own share
  // The over-allocation for the alignment went back: an ordinary allocation still fits below.
  EXPECT_NE(allocate(kAlice, 4 * kMiB), 0u);
}

TEST_F(VirtualMemoryTest, PhysicalAllocationsCountAgainstTheQuota) {
  manager->setQuota(kAlice, 3 * kChunk);
  const std::uint64_t handle = create(kAlice, 2 * kChunk);
  std::uint64_t refused = 0;
  EXPECT_EQ(manager->createPhysical(kAlice, 2 * kChunk, &refused), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(manager->releasePhysical(kAlice, handle), CUDA_SUCCESS);
  EXPECT_EQ(manager->createPhysical(kAlice, 2 * kChunk, &refused), CUDA_SUCCESS);
}

TEST_F(VirtualMemoryTest, TheEndOfASessionGivesEverythingBackScrubbed) {
  const DevicePtr base = reserve(kAlice, 2 * kChunk);
  const std::uint64_t handle = create(kAlice, 2 * kChunk);
  ASSERT_EQ(manager->mapPhysical(kAlice, base, 2 * kChunk, handle), CUDA_SUCCESS);
  ASSERT_TRUE(fake.write(base, 4096));
  create(kAlice, kChunk);  // never mapped
  manager->releaseClient(kAlice);
  EXPECT_EQ(manager->chargedBytes(kAlice), 0u);
  EXPECT_EQ(manager->check(kAlice, base, 1), PointerCheck::kUnknown);
  EXPECT_EQ(fake.physicalBytes(), 0u);
  // The addresses are free again.
  EXPECT_EQ(reserve(kAlice, 2 * kChunk), base);
}

}  // namespace
}  // namespace agileos::memmgr::testing
