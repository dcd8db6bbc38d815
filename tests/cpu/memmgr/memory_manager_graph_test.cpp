// Graph allocation reservations (allocateGraphReservation): placed and charged like an allocation,
// checked only while live, never freed by free(), given back only when not live.
#include <gtest/gtest.h>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

using MemoryManagerGraph = MemoryManagerTest;

TEST_F(MemoryManagerGraph, AReservationPassesChecksOnlyWhileLive) {
  for (std::uint64_t size : std::initializer_list<std::uint64_t>{4096, 3 * kMiB + 5}) {
    DevicePtr p = 0;
    ASSERT_EQ(manager->allocateGraphReservation(kAlice, size, &p), CUDA_SUCCESS) << size;
    EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown) << size;
    EXPECT_EQ(manager->check(kBob, p, 1), PointerCheck::kForeign) << size;
    EXPECT_FALSE(manager->setGraphAllocationLive(kBob, p, true)) << "another client's reservation";
    EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, p, false)) << "not live already";
    ASSERT_TRUE(manager->setGraphAllocationLive(kAlice, p, true));
    EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, p, true)) << "live already";
    EXPECT_EQ(manager->check(kAlice, p, size), PointerCheck::kOk) << size;
    EXPECT_EQ(manager->check(kAlice, p, size + 1), PointerCheck::kOutOfBounds) << size;
    EXPECT_EQ(manager->free(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "free() leaves graph reservations alone";
    EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "live: not given back";
    ASSERT_TRUE(manager->setGraphAllocationLive(kAlice, p, false));
    EXPECT_EQ(manager->freeGraphReservation(kBob, p), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_SUCCESS);
    EXPECT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_ERROR_INVALID_VALUE) << "given back once";
    EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown);
  }
}

TEST_F(MemoryManagerGraph, AReservationIsChargedFromItsCreation) {
  const std::uint64_t before = manager->bytesInUse(kAlice);
  DevicePtr p = 0;
  ASSERT_EQ(manager->allocateGraphReservation(kAlice, 3 * kMiB, &p), CUDA_SUCCESS);
  EXPECT_GE(manager->bytesInUse(kAlice), before + 3 * kMiB);
  ASSERT_EQ(manager->freeGraphReservation(kAlice, p), CUDA_SUCCESS);
  EXPECT_EQ(manager->bytesInUse(kAlice), before);
}

TEST_F(MemoryManagerGraph, AFreeOfAUserAllocationDoesNotReachGraphCalls) {
  const DevicePtr user = allocate(kAlice, 4096);
  EXPECT_FALSE(manager->setGraphAllocationLive(kAlice, user, true));
  EXPECT_EQ(manager->freeGraphReservation(kAlice, user), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->check(kAlice, user, 1), PointerCheck::kOk);
}

}  // namespace
}  // namespace agileos::memmgr::testing
