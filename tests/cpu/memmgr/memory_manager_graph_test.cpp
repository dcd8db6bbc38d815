// Graph allocations in the memory manager: a reservation is address space only and passes checks
// only while live (which needs a block mapped); blocks are physical memory charged from their
// creation, mapped at several of the same client's reservations at once, destroyed only when
// mapped nowhere; every call names the client's own reservations and blocks.
#include <gtest/gtest.h>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

using MemoryManagerGraph = MemoryManagerTest;

DevicePtr reserve(MemoryManager& manager, ClientId client, std::uint64_t size) {
  DevicePtr p = 0;
  EXPECT_EQ(manager.reserveGraphAddress(client, size, &p), CUDA_SUCCESS) << size;
  return p;
}

std::uint64_t block(MemoryManager& manager, ClientId client, std::uint64_t size) {
  std::uint64_t id = 0;
  EXPECT_EQ(manager.createGraphBlock(client, size, &id), CUDA_SUCCESS) << size;
  return id;
}

TEST_F(MemoryManagerGraph, AReservationIsAddressSpaceUntilABlockIsMappedThere) {
  const std::uint64_t physicalBefore = fake.physicalBytes();
  const DevicePtr p = reserve(*manager, kAlice, 3 * kMiB + 5);
  ASSERT_NE(p, 0u);
  EXPECT_EQ(fake.physicalBytes(), physicalBefore) << "no memory for a reservation";
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
  EXPECT_EQ(manager->graphSpan(3 * kMiB + 5), 2 * kChunk);
  EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, p, true)) << "nothing mapped: cannot be live";
  EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->check(kBob, p, 1), PointerCheck::kForeign);
  EXPECT_EQ(manager->freeGraphReservation(kBob, p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_SUCCESS);
  EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "given back once";
  EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown);
}

TEST_F(MemoryManagerGraph, AMappedReservationPassesChecksOnlyWhileLive) {
  for (std::uint64_t size : std::initializer_list<std::uint64_t>{4096, 3 * kMiB + 5}) {
    const DevicePtr p = reserve(*manager, kAlice, size);
    const std::uint64_t id = block(*manager, kAlice, manager->graphSpan(size));
    ASSERT_EQ(manager->mapGraphBlock(kAlice, p, id), CUDA_SUCCESS);
    EXPECT_TRUE(fake.isMappedAndAccessible(p, manager->graphSpan(size)));
    EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown) << "mapped, not live";
    EXPECT_FALSE(manager->setGraphAllocationLive(kBob, p, true)) << "another client's reservation";
    EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, p, false)) << "not live already";
    ASSERT_TRUE(manager->setGraphAllocationLive(kAlice, p, true));
    EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, p, true)) << "live already";
    EXPECT_EQ(manager->check(kAlice, p, size), PointerCheck::kOk) << size;
    EXPECT_EQ(manager->check(kAlice, p, size + 1), PointerCheck::kOutOfBounds) << "the size asked, exactly";
    EXPECT_EQ(manager->free(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "free() leaves graph reservations alone";
    EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "live: not given back";
    EXPECT_EQ(manager->unmapGraphReservation(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "live: not unmapped";
    EXPECT_EQ(manager->destroyGraphBlock(kAlice, id), CUDA_ERROR_INVALID_VALUE) << "mapped: not destroyed";
    ASSERT_TRUE(manager->setGraphAllocationLive(kAlice, p, false));
    EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_SUCCESS) << "its mapping goes with it";
    EXPECT_FALSE(fake.isMappedAndAccessible(p, 1));
    EXPECT_EQ(manager->destroyGraphBlock(kAlice, id), CUDA_SUCCESS);
  }
}

TEST_F(MemoryManagerGraph, ABlockIsChargedFromItsCreationAndMapsAtSeveralReservations) {
  manager->setQuota(kAlice, 3 * kChunk);
  const DevicePtr first = reserve(*manager, kAlice, kChunk);
  const DevicePtr second = reserve(*manager, kAlice, 100);
  const std::uint64_t id = block(*manager, kAlice, kChunk);
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk);
  EXPECT_EQ(manager->chargedBytes(kAlice), kChunk);
  ASSERT_EQ(manager->mapGraphBlock(kAlice, first, id), CUDA_SUCCESS);
  ASSERT_EQ(manager->mapGraphBlock(kAlice, second, id), CUDA_SUCCESS) << "one block, two reservations";
  EXPECT_EQ(manager->mapGraphBlock(kAlice, second, id), CUDA_ERROR_INVALID_VALUE) << "mapped already";
  EXPECT_EQ(manager->bytesInUse(kAlice), kChunk) << "charged once";
  std::uint64_t other = 0;
  EXPECT_EQ(manager->createGraphBlock(kAlice, 3 * kChunk, &other), CUDA_ERROR_OUT_OF_MEMORY) << "quota";
  EXPECT_EQ(manager->createGraphBlock(kAlice, kChunk + 1, &other), CUDA_ERROR_INVALID_VALUE)
      << "a multiple of the granularity";
  ASSERT_EQ(manager->unmapGraphReservation(kAlice, first), CUDA_SUCCESS);
  EXPECT_EQ(manager->unmapGraphReservation(kAlice, first), CUDA_ERROR_INVALID_VALUE) << "unmapped already";
  EXPECT_EQ(manager->destroyGraphBlock(kAlice, id), CUDA_ERROR_INVALID_VALUE) << "still mapped at the second";
  ASSERT_EQ(manager->unmapGraphReservation(kAlice, second), CUDA_SUCCESS);
  EXPECT_EQ(manager->destroyGraphBlock(kBob, id), CUDA_ERROR_INVALID_VALUE) << "another client's block";
  ASSERT_EQ(manager->destroyGraphBlock(kAlice, id), CUDA_SUCCESS);
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
  EXPECT_EQ(manager->freeGraphReservation(kAlice, first), CUDA_SUCCESS);
  EXPECT_EQ(manager->freeGraphReservation(kAlice, second), CUDA_SUCCESS);
}

TEST_F(MemoryManagerGraph, BlocksAndReservationsAreTheClientsOwn) {
  const DevicePtr alices = reserve(*manager, kAlice, kChunk);
  const DevicePtr bobs = reserve(*manager, kBob, kChunk);
  const std::uint64_t alicesBlock = block(*manager, kAlice, kChunk);
  const std::uint64_t small = block(*manager, kBob, kChunk);
  EXPECT_EQ(manager->mapGraphBlock(kBob, bobs, alicesBlock), CUDA_ERROR_INVALID_VALUE) << "another's block";
  EXPECT_EQ(manager->mapGraphBlock(kAlice, bobs, alicesBlock), CUDA_ERROR_INVALID_VALUE)
      << "another's reservation";
  EXPECT_EQ(manager->mapGraphBlock(kAlice, alices + 4096, alicesBlock), CUDA_ERROR_INVALID_VALUE)
      << "not a base";
  const DevicePtr large = reserve(*manager, kBob, 2 * kChunk);
  EXPECT_EQ(manager->mapGraphBlock(kBob, large, small), CUDA_ERROR_INVALID_VALUE)
      << "a block smaller than the span";
  const DevicePtr user = allocate(kAlice, 4096);
  EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, user, true)) << "a user allocation is no reservation";
  EXPECT_EQ(manager->freeGraphReservation(kAlice, user), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->check(kAlice, user, 1), PointerCheck::kOk);
}

TEST_F(MemoryManagerGraph, ReservationsCountAgainstTheClientsAddressSpace) {
  DevicePtr p = 0;
  EXPECT_EQ(manager->reserveGraphAddress(kAlice, kMaxReservedBytesPerClient + 1, &p),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(manager->reserveGraphAddress(kAlice, 0, &p), CUDA_ERROR_INVALID_VALUE);
  const DevicePtr half = reserve(*manager, kAlice, kMaxReservedBytesPerClient / 2);
  DevicePtr vmm = 0;
  EXPECT_EQ(manager->reserveAddress(kAlice, kMaxReservedBytesPerClient / 2 + kChunk, 0, &vmm),
            CUDA_ERROR_OUT_OF_MEMORY)
      << "cuMemAddressReserve shares the bound";
  EXPECT_EQ(manager->freeGraphReservation(kAlice, half), CUDA_SUCCESS);
  EXPECT_EQ(manager->reserveAddress(kAlice, kMaxReservedBytesPerClient / 2 + kChunk, 0, &vmm), CUDA_SUCCESS);
  EXPECT_EQ(manager->freeAddress(kAlice, vmm, kMaxReservedBytesPerClient / 2 + kChunk), CUDA_SUCCESS);
}

TEST_F(MemoryManagerGraph, ReleaseClientTakesReservationsAndBlocksScrubbed) {
  const DevicePtr p = reserve(*manager, kAlice, kChunk);
  const std::uint64_t id = block(*manager, kAlice, kChunk);
  ASSERT_EQ(manager->mapGraphBlock(kAlice, p, id), CUDA_SUCCESS);
  ASSERT_TRUE(manager->setGraphAllocationLive(kAlice, p, true));
  ASSERT_TRUE(fake.write(p, kChunk));
  manager->releaseClient(kAlice);
  EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
  EXPECT_EQ(manager->destroyGraphBlock(kAlice, id), CUDA_ERROR_INVALID_VALUE) << "gone";
  EXPECT_EQ(fake.liveHandles(), 0u) << "the block was given back (the fixture's teardown checks the scrub)";
}

}  // namespace
}  // namespace agileos::memmgr::testing
