#include "memmgr/va_range_allocator.h"

#include <gtest/gtest.h>

namespace agileos::memmgr {
namespace {

constexpr std::uint64_t kUnit = 2ull << 20;
constexpr Region kRegion{0x100000000ull, 16 * kUnit};

TEST(VaRangeAllocator, HandsOutLowestAddressesFirst) {
  VaRangeAllocator va(kRegion, kUnit);
  EXPECT_EQ(va.allocate(kUnit), kRegion.begin);
  EXPECT_EQ(va.allocate(2 * kUnit), kRegion.begin + kUnit);
  EXPECT_EQ(va.allocate(kUnit), kRegion.begin + 3 * kUnit);
  EXPECT_EQ(va.freeBytes(), 12 * kUnit);
}

TEST(VaRangeAllocator, RefusesZeroUnalignedAndOversizedRequests) {
  VaRangeAllocator va(kRegion, kUnit);
  EXPECT_FALSE(va.allocate(0));
  EXPECT_FALSE(va.allocate(kUnit + 256));
  EXPECT_FALSE(va.allocate(17 * kUnit));
  EXPECT_EQ(va.freeBytes(), kRegion.size);
}

TEST(VaRangeAllocator, FirstFitReusesTheFirstHoleThatIsLargeEnough) {
  VaRangeAllocator va(kRegion, kUnit);
  const DevicePtr a = *va.allocate(kUnit);
  const DevicePtr b = *va.allocate(kUnit);
  const DevicePtr c = *va.allocate(3 * kUnit);
  ASSERT_TRUE(va.allocate(kUnit));
  ASSERT_TRUE(va.release(a, kUnit));
  ASSERT_TRUE(va.release(c, 3 * kUnit));
  EXPECT_EQ(va.allocate(2 * kUnit), c);  // the hole at a is too small
  EXPECT_EQ(va.allocate(kUnit), a);
  EXPECT_EQ(va.allocate(kUnit), c + 2 * kUnit);
  (void)b;
}

TEST(VaRangeAllocator, ReleaseCoalescesWithBothNeighbours) {
  VaRangeAllocator va(kRegion, kUnit);
  const DevicePtr a = *va.allocate(kUnit);
  const DevicePtr b = *va.allocate(kUnit);
  const DevicePtr c = *va.allocate(kUnit);
  ASSERT_TRUE(va.release(a, kUnit));
  ASSERT_TRUE(va.release(c, kUnit));  // merges with the free tail
  EXPECT_EQ(va.freeIntervalCount(), 2u);
  ASSERT_TRUE(va.release(b, kUnit));
  EXPECT_EQ(va.freeIntervalCount(), 1u);
  EXPECT_EQ(va.freeBytes(), kRegion.size);
  EXPECT_EQ(va.allocate(kRegion.size), kRegion.begin);  // whole region again
}

TEST(VaRangeAllocator, RefusesDoubleReleaseOverlapAndForeignRanges) {
  VaRangeAllocator va(kRegion, kUnit);
  const DevicePtr a = *va.allocate(2 * kUnit);
  ASSERT_TRUE(va.allocate(kUnit));
  EXPECT_TRUE(va.release(a, kUnit));
  EXPECT_FALSE(va.release(a, kUnit));                          // already free
  EXPECT_FALSE(va.release(a, 2 * kUnit));                      // half of it is free
  EXPECT_FALSE(va.release(kRegion.begin + 4 * kUnit, kUnit));  // never allocated
  EXPECT_FALSE(va.release(kRegion.begin - kUnit, kUnit));      // below the region
  EXPECT_FALSE(va.release(kRegion.end(), kUnit));              // above the region
  EXPECT_FALSE(va.release(a + kUnit + 256, kUnit));            // unaligned
  EXPECT_TRUE(va.release(a + kUnit, kUnit));
}

TEST(VaRangeAllocator, ExhaustionThenRecovery) {
  VaRangeAllocator va(kRegion, kUnit);
  ASSERT_EQ(va.allocate(kRegion.size), kRegion.begin);
  EXPECT_FALSE(va.allocate(kUnit));
  EXPECT_EQ(va.freeBytes(), 0u);
  ASSERT_TRUE(va.release(kRegion.begin, kRegion.size));
  EXPECT_EQ(va.allocate(kUnit), kRegion.begin);
}

}  // namespace
}  // namespace agileos::memmgr
