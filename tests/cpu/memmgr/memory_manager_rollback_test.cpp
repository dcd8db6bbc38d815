// Backend failures: an allocation that fails at any driver call leaves nothing behind;
// a teardown that fails keeps the memory out of reuse and is finished by the destructor.
#include <gtest/gtest.h>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

constexpr CUresult kInjected = CUDA_ERROR_NOT_PERMITTED;

struct Snapshot {
  std::size_t handles, mappings, entries;
  std::uint64_t physical, bytesInUse, fills;
  bool operator==(const Snapshot&) const = default;
};

class MemoryManagerRollback : public MemoryManagerTest, public ::testing::WithParamInterface<CUresult> {
 protected:
  Snapshot snapshot() const {
    return {fake.liveHandles(),   fake.liveMappings(),         manager->table().size(),
            fake.physicalBytes(), manager->bytesInUse(kAlice), fake.fills().size()};
  }

  // Fails the 1st, 2nd, ... backend call of allocate(size) until an attempt makes
  // fewer calls than that; checks each failure left no trace. Returns the number
  // of failing attempts and stores the successful pointer in *allocated.
  int failEveryStep(std::uint64_t size, DevicePtr* allocated) {
    const CUresult injected = GetParam();
    for (int step = 1; step < 20; ++step) {
      const Snapshot before = snapshot();
      fake.failNthCall(step, injected);
      DevicePtr p = 0;
      const CUresult result = manager->allocate(kAlice, size, &p);
      fake.clearInjectedFailures();
      if (result == CUDA_SUCCESS) {
        *allocated = p;
        return step - 1;
      }
      EXPECT_EQ(result, injected) << "step " << step;
      EXPECT_EQ(p, 0u) << "step " << step;
      EXPECT_EQ(snapshot(), before) << "step " << step;
      EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
    }
    ADD_FAILURE() << "allocate kept failing";
    return -1;
  }
};

TEST_P(MemoryManagerRollback, NewChunkFailsAtEveryStepWithoutTrace) {
  DevicePtr p = 0;
  EXPECT_EQ(failEveryStep(100, &p), 3);  // createPhysical, map, setAccess
  EXPECT_EQ(p, kUserRange.begin);        // no VA was lost on the way
  EXPECT_EQ(manager->check(kAlice, p, 100), PointerCheck::kOk);
  EXPECT_EQ(fake.liveHandles(), 1u);
}

TEST_P(MemoryManagerRollback, LargeAllocationFailsAtEveryStepWithoutTrace) {
  DevicePtr p = 0;
  EXPECT_EQ(failEveryStep(3 * kMiB, &p), 3);
  EXPECT_EQ(p, kUserRange.begin);
  EXPECT_TRUE(fake.isMappedAndAccessible(p, 4 * kMiB));
  EXPECT_EQ(fake.liveHandles(), 1u);
}

TEST_P(MemoryManagerRollback, SlotFromAnExistingChunkNeedsNoDriverCall) {
  allocate(kAlice, 100);
  DevicePtr p = 0;
  EXPECT_EQ(failEveryStep(100, &p), 0);
  EXPECT_EQ(p, kUserRange.begin + 256);
}

INSTANTIATE_TEST_SUITE_P(InjectedResults, MemoryManagerRollback,
                         ::testing::Values(kInjected, CUDA_ERROR_OUT_OF_MEMORY));

using MemoryManagerTeardownFailure = MemoryManagerTest;

TEST_F(MemoryManagerTeardownFailure, FailedUnmapStrandsTheRangeUntilTheDestructor) {
  const DevicePtr p = allocate(kAlice, 2 * kMiB);
  ASSERT_TRUE(fake.write(p, 64));
  fake.failNextCall(VmmCall::kUnmap, kInjected);
  EXPECT_EQ(manager->free(kAlice, p), kInjected);
  EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kUnknown);  // gone for the client
  EXPECT_EQ(manager->free(kAlice, p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.liveMappings(), 1u);
  EXPECT_NE(allocate(kAlice, 2 * kMiB), p);  // its VA is not reused while it may be mapped
  // TearDown: the destructor finishes the teardown, so nothing is left and nothing was unscrubbed.
}

TEST_F(MemoryManagerTeardownFailure, FailedScrubNeverUnmapsDirtyMemory) {
  const DevicePtr p = allocate(kAlice, 2 * kMiB);
  ASSERT_TRUE(fake.write(p, 64));
  fake.failNextCall(VmmCall::kFill, kInjected);
  EXPECT_EQ(manager->free(kAlice, p), kInjected);
  EXPECT_EQ(fake.liveMappings(), 1u);
  EXPECT_EQ(fake.callCount(VmmCall::kUnmap), 0u);
}

TEST_F(MemoryManagerTeardownFailure, FailedReleaseDuringRollbackIsRetriedByTheDestructor) {
  fake.failNextCall(VmmCall::kMap, kInjected);
  fake.failNextCall(VmmCall::kReleasePhysical, kInjected);
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kAlice, 2 * kMiB, &p), kInjected);
  EXPECT_EQ(manager->table().size(), 0u);
  EXPECT_EQ(fake.liveHandles(), 1u);  // stranded, not forgotten
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
}

TEST_F(MemoryManagerTeardownFailure, FailedChunkTeardownOnReleaseClient) {
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(fake.write(allocate(kAlice, 256u << i), 8));
  fake.failNextCall(VmmCall::kReleasePhysical, kInjected);
  manager->releaseClient(kAlice);
  EXPECT_EQ(manager->table().size(), 0u);
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
  EXPECT_EQ(fake.liveMappings(), 0u);
  EXPECT_EQ(fake.liveHandles(), 1u);
}

}  // namespace
}  // namespace agileos::memmgr::testing
