// Where managed segments go (worker/host_memory/managed_addresses.h): aligned, with a gap after
// each, never outside the window, starting over at its end, skipping past a taken address.
#include "worker/host_memory/managed_addresses.h"

#include <gtest/gtest.h>

namespace agileos::worker {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr memmgr::Region kWindow{0x300000000000ull, 16 * kMiB};

TEST(ManagedAddresses, SegmentsAreAlignedAndKeepAGapBetweenThem) {
  ManagedAddresses addresses(kWindow);
  const std::uint64_t first = addresses.take(4096);
  EXPECT_EQ(first, kWindow.begin);
  const std::uint64_t second = addresses.take(2 * kMiB);  // 2 MiB + the gap: two steps
  EXPECT_EQ(second, kWindow.begin + 2 * kMiB);
  const std::uint64_t third = addresses.take(1);
  EXPECT_EQ(third, second + 4 * kMiB);
  EXPECT_GE(third - second, 2 * kMiB + ManagedAddresses::kGap);
  EXPECT_EQ(third % ManagedAddresses::kAlignment, 0u);
}

TEST(ManagedAddresses, NothingLeavesTheWindowAndTheEndStartsOver) {
  ManagedAddresses addresses(kWindow);
  EXPECT_EQ(addresses.take(0), 0u);
  EXPECT_EQ(addresses.take(kWindow.size), 0u) << "no room for the gap";
  EXPECT_EQ(addresses.take(~0ull), 0u);
  EXPECT_EQ(addresses.take(kWindow.size - ManagedAddresses::kGap), kWindow.begin) << "the whole window";
  EXPECT_EQ(addresses.take(4096), kWindow.begin) << "started over";
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t at = addresses.take(3 * kMiB);
    ASSERT_NE(at, 0u);
    EXPECT_GE(at, kWindow.begin);
    EXPECT_LE(at + 3 * kMiB + ManagedAddresses::kGap, kWindow.end()) << i;
  }
}

TEST(ManagedAddresses, ATakenAddressIsSkippedWellPast) {
  constexpr memmgr::Region kLarge{0x300000000000ull, 1ull << 40};
  ManagedAddresses addresses(kLarge);
  const std::uint64_t at = addresses.take(4096);
  addresses.skipPast(at);
  EXPECT_EQ(addresses.take(4096), at + ManagedAddresses::kCollisionSkip);
  addresses.skipPast(at);  // an older collision never moves the cursor back
  EXPECT_GT(addresses.take(4096), at + ManagedAddresses::kCollisionSkip);
  addresses.skipPast(kLarge.end() - 4096);  // past the end: the next one starts over
  EXPECT_EQ(addresses.take(4096), kLarge.begin);
}

}  // namespace
}  // namespace agileos::worker
