// releaseClient(): everything of one client goes, scrubbed; nothing of anyone else changes.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

constexpr DevicePtr kGlobals = 0x7f0000000000ull;

using MemoryManagerRelease = MemoryManagerTest;

TEST_F(MemoryManagerRelease, ScrubsAndReleasesEverythingOfOneClientOnly) {
  std::vector<DevicePtr> alices;
  for (std::uint64_t size : std::initializer_list<std::uint64_t>{100, 300, 5000, 5000, 3 * kMiB, 64 * kMiB}) {
    alices.push_back(allocate(kAlice, size));
    ASSERT_TRUE(fake.write(alices.back(), 8));  // a pattern the next owner must not see
  }
  // One more chunk that Alice emptied and keeps cached: it was written too.
  const DevicePtr cached = allocate(kAlice, 128 * 1024);
  ASSERT_TRUE(fake.write(cached, 128 * 1024));
  ASSERT_EQ(manager->free(kAlice, cached), CUDA_SUCCESS);
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, kGlobals, 64));

  const DevicePtr bobs = allocate(kBob, 100);
  const DevicePtr bobsLarge = allocate(kBob, 3 * kMiB);
  ASSERT_TRUE(fake.write(bobs, 8));
  const std::size_t bobsHandles = 2;
  const std::size_t fillsBefore = fake.fills().size();

  manager->releaseClient(kAlice);

  for (DevicePtr p : alices) EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->check(kAlice, kGlobals, 64), PointerCheck::kUnknown);
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
  EXPECT_EQ(manager->table().bytesOwnedBy(kAlice), 0u);
  EXPECT_EQ(fake.liveHandles(), bobsHandles);
  // Every mapping given back was zero-filled as a whole first (the fake flags any that was not).
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
  const auto fills = fake.fills();
  ASSERT_EQ(fills.size() - fillsBefore, 6u);  // chunks of 256, 512, 8 KiB, 128 KiB classes + 2 large
  for (std::size_t i = fillsBefore; i < fills.size(); ++i) {
    EXPECT_EQ(fills[i].value, 0);
    EXPECT_EQ(fills[i].size % manager->granularity(), 0u);
  }

  EXPECT_EQ(manager->check(kBob, bobs, 100), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kBob, bobsLarge, 3 * kMiB), PointerCheck::kOk);
  EXPECT_TRUE(fake.isMappedAndAccessible(bobs, 100));
}

TEST_F(MemoryManagerRelease, ReleasedMemoryIsReusedOnlyAfterScrubbing) {
  const DevicePtr alices = allocate(kAlice, 8 * kMiB);
  ASSERT_TRUE(fake.write(alices, 8 * kMiB));
  manager->releaseClient(kAlice);
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
  const DevicePtr bobs = allocate(kBob, 8 * kMiB);
  EXPECT_EQ(bobs, alices);  // same VA (first fit), fresh physical memory
  EXPECT_EQ(manager->check(kAlice, bobs, 1), PointerCheck::kForeign);
  EXPECT_EQ(manager->free(kAlice, bobs), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryManagerRelease, UnknownClientIsANoOp) {
  const DevicePtr p = allocate(kAlice, 100);
  const std::uint64_t calls = fake.callCount();
  manager->releaseClient(kBob);
  EXPECT_EQ(fake.callCount(), calls);
  EXPECT_EQ(manager->check(kAlice, p, 100), PointerCheck::kOk);
}

TEST_F(MemoryManagerRelease, AClientCanStartAgainAfterRelease) {
  allocate(kAlice, 100);
  manager->releaseClient(kAlice);
  const DevicePtr p = allocate(kAlice, 100);
  EXPECT_EQ(manager->check(kAlice, p, 100), PointerCheck::kOk);
  EXPECT_EQ(manager->bytesInUse(kAlice), manager->granularity());
}

TEST_F(MemoryManagerRelease, DestructorScrubsWhatIsStillLive) {
  ASSERT_TRUE(fake.write(allocate(kAlice, 100), 8));
  ASSERT_TRUE(fake.write(allocate(kBob, 5 * kMiB), 8));
  // TearDown destroys the manager and asserts no unscrubbed unmap and nothing left.
}

TEST_F(MemoryManagerRelease, ProtectedAllocationsLiveInTheModuleRangeAndGoWithTheirClient) {
  DevicePtr alices = 0, bobs = 0;
  ASSERT_EQ(manager->allocateProtected(kAlice, 100, &alices), CUDA_SUCCESS);
  ASSERT_EQ(manager->allocateProtected(kBob, 3 * kMiB, &bobs), CUDA_SUCCESS);
  EXPECT_TRUE(kModuleRange.contains(alices));
  EXPECT_TRUE(kModuleRange.contains(bobs));
  EXPECT_TRUE(fake.isMappedAndAccessible(alices, manager->granularity()));
  // Zero-filled when made, and never something a client call can name.
  const auto fills = fake.fills();
  ASSERT_GE(fills.size(), 2u);
  EXPECT_EQ(fills[0].value, 0);
  EXPECT_EQ(manager->check(kAlice, alices, 1), PointerCheck::kProtected);
  EXPECT_EQ(manager->free(kAlice, alices), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->freeProtected(kBob, alices), CUDA_ERROR_INVALID_VALUE) << "not Bob's";
  EXPECT_EQ(manager->allocateProtected(kAlice, 0, &alices), CUDA_ERROR_INVALID_VALUE);

  manager->releaseClient(kAlice);
  EXPECT_TRUE(fake.isMappedAndAccessible(alices, 1)) << "a device reset keeps protected state";
  manager->releaseProtected(kAlice);
  EXPECT_FALSE(fake.isMappedAndAccessible(alices, 1));
  EXPECT_TRUE(fake.isMappedAndAccessible(bobs, 3 * kMiB));
  EXPECT_EQ(manager->freeProtected(kBob, bobs), CUDA_SUCCESS);
  EXPECT_FALSE(fake.isMappedAndAccessible(bobs, 1));
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

}  // namespace
}  // namespace agileos::memmgr::testing
