// check() and module globals: boundaries, overflow, protected ranges, foreign and out-of-bounds ranges.
#include <gtest/gtest.h>

#include <limits>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

constexpr DevicePtr kMax = std::numeric_limits<DevicePtr>::max();
// Where the driver might place module globals: outside the three fixed ranges.
constexpr DevicePtr kGlobals = 0x7f0000000000ull;

using MemoryManagerCheck = MemoryManagerTest;

TEST_F(MemoryManagerCheck, FirstByteLastByteAndOnePastTheEnd) {
  for (std::uint64_t size : std::initializer_list<std::uint64_t>{100, 4096, 3 * kMiB + 5}) {
    const DevicePtr p = allocate(kAlice, size);
    EXPECT_EQ(manager->check(kAlice, p, 1), PointerCheck::kOk) << size;
    EXPECT_EQ(manager->check(kAlice, p + size - 1, 1), PointerCheck::kOk) << size;
    EXPECT_EQ(manager->check(kAlice, p, size), PointerCheck::kOk) << size;
    // Mapped (the slot or the rounded mapping goes on), but not part of the allocation.
    EXPECT_EQ(manager->check(kAlice, p + size, 1), PointerCheck::kUnknown) << size;
    EXPECT_EQ(manager->check(kAlice, p + size - 1, 2), PointerCheck::kOutOfBounds) << size;
    EXPECT_EQ(manager->check(kAlice, p + size - 1, 0), PointerCheck::kOk) << size;  // n == 0: one byte
    EXPECT_EQ(manager->check(kAlice, p + size, 0), PointerCheck::kUnknown) << size;
    // The byte before the very first user allocation is the last byte of the module range.
    EXPECT_EQ(manager->check(kAlice, p - 1, 1),
              p == kUserRange.begin ? PointerCheck::kProtected : PointerCheck::kUnknown)
        << size;
  }
}

TEST_F(MemoryManagerCheck, NullAndOverflowComeFirst) {
  const DevicePtr p = allocate(kAlice, 4096);
  EXPECT_EQ(manager->check(kAlice, 0, 0), PointerCheck::kNull);
  EXPECT_EQ(manager->check(kAlice, 0, 4096), PointerCheck::kNull);
  EXPECT_EQ(manager->check(kAlice, p, kMax), PointerCheck::kOverflow);
  EXPECT_EQ(manager->check(kAlice, p, kMax - p + 1), PointerCheck::kOverflow);
  EXPECT_EQ(manager->check(kAlice, kMax - 15, 32), PointerCheck::kOverflow);
  EXPECT_EQ(manager->check(kAlice, kIoAperture.begin, kMax), PointerCheck::kOverflow);
  EXPECT_EQ(manager->check(kAlice, p, kMax - p), PointerCheck::kOutOfBounds);  // ends at 2^64 - 1: no wrap
}

TEST_F(MemoryManagerCheck, BothProtectedRangesAreRefusedWhateverTheLength) {
  for (const Region& region : {kIoAperture, kModuleRange}) {
    EXPECT_EQ(manager->check(kAlice, region.begin, 1), PointerCheck::kProtected);
    EXPECT_EQ(manager->check(kAlice, region.begin, 0), PointerCheck::kProtected);
    EXPECT_EQ(manager->check(kAlice, region.begin + region.size / 2, 8), PointerCheck::kProtected);
    EXPECT_EQ(manager->check(kAlice, region.end() - 1, 1), PointerCheck::kProtected);
  }
  // From the module range into the user range.
  EXPECT_EQ(manager->check(kAlice, kUserRange.begin - 1, 2), PointerCheck::kProtected);
  EXPECT_EQ(manager->check(kAlice, kIoAperture.begin - 1, 1), PointerCheck::kUnknown);
}

TEST_F(MemoryManagerCheck, RangesStraddlingIntoProtectedMemoryFromBelowAreProtected) {
  // The highest module global the driver could place below the I/O aperture.
  const DevicePtr global = kIoAperture.begin - 4096;
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, global, 4096));
  EXPECT_EQ(manager->check(kAlice, global, 4096), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kAlice, global, 4097), PointerCheck::kProtected);  // not merely out of bounds
  EXPECT_EQ(manager->check(kAlice, global + 4095, 2), PointerCheck::kProtected);
  EXPECT_EQ(manager->check(kAlice, global, kModuleRange.end() - global), PointerCheck::kProtected);
  EXPECT_EQ(manager->check(kAlice, 0x1000, kUserRange.begin), PointerCheck::kProtected);  // spans both
}

TEST_F(MemoryManagerCheck, AnotherClientsAllocationsAreForeign) {
  const DevicePtr small = allocate(kAlice, 100);
  const DevicePtr large = allocate(kAlice, 3 * kMiB);
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, kGlobals, 64));
  for (DevicePtr p : {small, small + 99, large, large + 3 * kMiB - 1, kGlobals + 8}) {
    EXPECT_EQ(manager->check(kBob, p, 1), PointerCheck::kForeign) << std::hex << p;
    EXPECT_EQ(manager->check(kBob, p, 8 * kMiB), PointerCheck::kForeign) << std::hex << p;
  }
  // Bob's own chunk sits right after Alice's allocations but Alice cannot name it.
  const DevicePtr bob = allocate(kBob, 100);
  EXPECT_EQ(manager->check(kAlice, bob, 1), PointerCheck::kForeign);
  EXPECT_EQ(manager->check(kBob, bob, 100), PointerCheck::kOk);
}

TEST_F(MemoryManagerCheck, RunningFromOwnAllocationIntoAnothersIsOutOfBounds) {
  const DevicePtr alice = allocate(kAlice, 2 * kMiB);
  const DevicePtr bob = allocate(kBob, 2 * kMiB);
  ASSERT_EQ(bob, alice + 2 * kMiB);  // adjacent mappings
  EXPECT_EQ(manager->check(kAlice, alice, 2 * kMiB + 1), PointerCheck::kOutOfBounds);
  EXPECT_EQ(manager->check(kAlice, alice + 2 * kMiB, 1), PointerCheck::kForeign);
}

TEST_F(MemoryManagerCheck, AddressesNeverAllocatedAreUnknown) {
  EXPECT_EQ(manager->check(kAlice, kUserRange.begin, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->check(kAlice, kUserRange.end() - 1, 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->check(kAlice, kUserRange.end(), 1), PointerCheck::kUnknown);
  EXPECT_EQ(manager->check(kAlice, 0x1000, 1), PointerCheck::kUnknown);
}

TEST_F(MemoryManagerCheck, ModuleGlobalsValidateUntilForgotten) {
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, kGlobals, 64));
  EXPECT_EQ(manager->check(kAlice, kGlobals, 64), PointerCheck::kOk);
  EXPECT_EQ(manager->check(kAlice, kGlobals + 60, 8), PointerCheck::kOutOfBounds);
  EXPECT_EQ(manager->table().find(kGlobals)->kind, AllocationKind::kModuleGlobal);

  manager->forgetModuleGlobal(kBob, kGlobals);        // not Bob's: ignored
  manager->forgetModuleGlobal(kAlice, kGlobals + 8);  // not the base: ignored
  EXPECT_EQ(manager->check(kAlice, kGlobals, 64), PointerCheck::kOk);
  manager->forgetModuleGlobal(kAlice, kGlobals);
  EXPECT_EQ(manager->check(kAlice, kGlobals, 64), PointerCheck::kUnknown);
}

TEST_F(MemoryManagerCheck, ModuleGlobalsAreRefusedWhereTheyCannotBe) {
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, 0, 64));
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kGlobals, 0));
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kMax - 8, 64));
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kIoAperture.begin, 64));
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kModuleRange.begin + 4096, 64));
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kIoAperture.begin - 32, 64));  // straddles into it
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kUserRange.begin + 4096, 64));
  EXPECT_FALSE(manager->registerModuleGlobal(kAlice, kUserRange.end() - 32, 64));
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, kGlobals, 64));
  EXPECT_FALSE(manager->registerModuleGlobal(kBob, kGlobals + 32, 64));  // overlaps Alice's
  EXPECT_TRUE(manager->registerModuleGlobal(kBob, kGlobals + 64, 64));
  EXPECT_TRUE(manager->registerModuleGlobal(kAlice, kUserRange.end(), 64));  // just above the user range
  EXPECT_EQ(manager->table().size(), 3u);
}

}  // namespace
}  // namespace agileos::memmgr::testing
