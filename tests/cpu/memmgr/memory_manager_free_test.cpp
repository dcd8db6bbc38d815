// free(): only the exact base of a live user allocation of the caller; nothing else changes anything.
#include <gtest/gtest.h>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

using MemoryManagerFree = MemoryManagerTest;

TEST_F(MemoryManagerFree, NullIsANoOp) {
  const std::uint64_t calls = fake.callCount();
  EXPECT_EQ(manager->free(kAlice, 0), CUDA_SUCCESS);
  EXPECT_EQ(fake.callCount(), calls);
}

TEST_F(MemoryManagerFree, FreedPointersBecomeUnknown) {
  const DevicePtr small = allocate(kAlice, 100);
  const DevicePtr large = allocate(kAlice, 5 * kMiB);
  ASSERT_EQ(manager->free(kAlice, small), CUDA_SUCCESS);
  ASSERT_EQ(manager->free(kAlice, large), CUDA_SUCCESS);
  EXPECT_EQ(manager->check(kAlice, small, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->check(kAlice, large, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->table().size(), 0u);
  EXPECT_FALSE(fake.isMappedAndAccessible(large, 1));
}

TEST_F(MemoryManagerFree, DoubleFreeIsRefused) {
  const DevicePtr small = allocate(kAlice, 100);
  const DevicePtr large = allocate(kAlice, 5 * kMiB);
  ASSERT_EQ(manager->free(kAlice, small), CUDA_SUCCESS);
  ASSERT_EQ(manager->free(kAlice, large), CUDA_SUCCESS);
  const std::uint64_t calls = fake.callCount();
  EXPECT_EQ(manager->free(kAlice, small), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kAlice, large), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.callCount(), calls);
}

TEST_F(MemoryManagerFree, DoubleFreeCannotFreeTheNextOwnerOfTheSlot) {
  const DevicePtr p = allocate(kAlice, 100);
  ASSERT_EQ(manager->free(kAlice, p), CUDA_SUCCESS);
  const DevicePtr again = allocate(kAlice, 100);
  ASSERT_EQ(again, p);  // the slot was reused
  EXPECT_EQ(manager->free(kBob, p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->check(kAlice, again, 100), PointerCheck::kOk);
}

TEST_F(MemoryManagerFree, InteriorOutsideForeignAndProtectedPointersAreRefused) {
  const DevicePtr small = allocate(kAlice, 1000);
  const DevicePtr large = allocate(kAlice, 5 * kMiB);
  const std::uint64_t calls = fake.callCount();
  for (DevicePtr p : {small + 256, small + 1, large + 2 * kMiB, large + 5 * kMiB, small + 1000}) {
    EXPECT_EQ(manager->free(kAlice, p), CUDA_ERROR_INVALID_VALUE) << std::hex << p;
  }
  EXPECT_EQ(manager->free(kBob, small), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kBob, large), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kAlice, kIoAperture.begin), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kAlice, kModuleRange.begin), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kAlice, kUserRange.end() - 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kAlice, ~DevicePtr{0}), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.callCount(), calls);
  EXPECT_EQ(manager->table().size(), 2u);
  EXPECT_EQ(manager->check(kAlice, small, 1000), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kAlice, large, 5 * kMiB), PointerCheck::kOk);
}

TEST_F(MemoryManagerFree, ModuleGlobalsCannotBeFreed) {
  const DevicePtr global = 0x7f0000001000ull;
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, global, 64));
  EXPECT_EQ(manager->free(kAlice, global), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->check(kAlice, global, 64), PointerCheck::kOk);
}

TEST_F(MemoryManagerFree, LargeFreeScrubsBeforeUnmapping) {
  const DevicePtr p = allocate(kAlice, 3 * kMiB);
  ASSERT_TRUE(fake.write(p, 3 * kMiB));
  ASSERT_EQ(manager->free(kAlice, p), CUDA_SUCCESS);
  const auto fills = fake.fills();
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0].va, p);
  EXPECT_EQ(fills[0].size, 4 * kMiB);  // the whole mapping, not just the request
  EXPECT_EQ(fills[0].value, 0);
  EXPECT_EQ(fake.liveHandles(), 0u);
  EXPECT_EQ(manager->bytesInUse(kAlice), 0u);
}

}  // namespace
}  // namespace agileos::memmgr::testing
