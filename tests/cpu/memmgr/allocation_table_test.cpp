#include "memmgr/allocation_table.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

namespace agileos::memmgr {
namespace {

constexpr ClientId kAlice = 1;
constexpr ClientId kBob = 2;
constexpr DevicePtr kBase = kUserRange.begin + 0x10000;
constexpr DevicePtr kMax = std::numeric_limits<DevicePtr>::max();

Allocation user(DevicePtr base, std::uint64_t size, ClientId owner = kAlice) {
  return {base, size, owner, AllocationKind::kUser};
}

TEST(AllocationTable, InsertRefusesEmptyWrappingAndOverlappingRanges) {
  AllocationTable table;
  EXPECT_FALSE(table.insert(user(kBase, 0)));
  EXPECT_FALSE(table.insert(user(kMax - 10, 20)));
  ASSERT_TRUE(table.insert(user(kBase, 1000)));
  EXPECT_FALSE(table.insert(user(kBase, 1000, kBob)));  // same range, other owner
  EXPECT_FALSE(table.insert(user(kBase - 10, 11)));     // ends on its first byte
  EXPECT_FALSE(table.insert(user(kBase + 999, 10)));    // starts on its last byte
  EXPECT_FALSE(table.insert(user(kBase + 10, 10)));     // inside
  EXPECT_FALSE(table.insert(user(kBase - 10, 2000)));   // around
  EXPECT_TRUE(table.insert(user(kBase - 10, 10)));      // adjacent below
  EXPECT_TRUE(table.insert(user(kBase + 1000, 10)));    // adjacent above
  EXPECT_EQ(table.size(), 3u);
}

TEST(AllocationTable, CheckVerdictsInOrder) {
  AllocationTable table;
  ASSERT_TRUE(table.insert(user(kBase, 1000)));
  ASSERT_TRUE(table.insert(user(kBase + 4096, 512, kBob)));

  EXPECT_EQ(table.check(kAlice, 0, 16), PointerCheck::kNull);
  EXPECT_EQ(table.check(kAlice, kMax - 10, 100), PointerCheck::kOverflow);
  EXPECT_EQ(table.check(kAlice, kMax, 1), PointerCheck::kOverflow);  // one past the end is 2^64
  EXPECT_EQ(table.check(kAlice, 1, kMax), PointerCheck::kOverflow);
  EXPECT_EQ(table.check(kAlice, kIoAperture.begin, 1), PointerCheck::kProtected);
  EXPECT_EQ(table.check(kAlice, kModuleRange.end() - 1, 1), PointerCheck::kProtected);
  EXPECT_EQ(table.check(kAlice, kBase - 1, 2), PointerCheck::kUnknown);  // starts before, runs in
  EXPECT_EQ(table.check(kAlice, kBase + 4096, 4), PointerCheck::kForeign);
  EXPECT_EQ(table.check(kBob, kBase, 4), PointerCheck::kForeign);
  EXPECT_EQ(table.check(kAlice, kBase + 500, 501), PointerCheck::kOutOfBounds);
  EXPECT_EQ(table.check(kAlice, kBase + 500, 500), PointerCheck::kOk);
  EXPECT_EQ(table.check(kBob, kBase + 4096, 512), PointerCheck::kOk);
}

TEST(AllocationTable, BoundariesAndZeroLength) {
  AllocationTable table;
  ASSERT_TRUE(table.insert(user(kBase, 1000)));
  EXPECT_EQ(table.check(kAlice, kBase, 1), PointerCheck::kOk);              // first byte
  EXPECT_EQ(table.check(kAlice, kBase + 999, 1), PointerCheck::kOk);        // last byte
  EXPECT_EQ(table.check(kAlice, kBase + 1000, 1), PointerCheck::kUnknown);  // one past the end
  EXPECT_EQ(table.check(kAlice, kBase, 1000), PointerCheck::kOk);
  EXPECT_EQ(table.check(kAlice, kBase, 1001), PointerCheck::kOutOfBounds);
  EXPECT_EQ(table.check(kAlice, kBase + 999, 0), PointerCheck::kOk);  // n == 0 is one byte
  EXPECT_EQ(table.check(kAlice, kBase + 1000, 0), PointerCheck::kUnknown);
  EXPECT_EQ(table.check(kAlice, kBase - 1, 0), PointerCheck::kUnknown);
}

TEST(AllocationTable, BackToBackMappingsOfOneClientAreOneRangeAndNothingElseIs) {
  constexpr DevicePtr kRun = kUserRange.begin + (1ull << 30);
  constexpr std::uint64_t kSize = 2ull << 20;
  const auto mapping = [](DevicePtr base, ClientId owner = kAlice) {
    return Allocation{base, kSize, owner, AllocationKind::kVirtualMapping};
  };
  AllocationTable table;
  ASSERT_TRUE(table.insert(mapping(kRun)));
  ASSERT_TRUE(table.insert(mapping(kRun + kSize)));
  ASSERT_TRUE(table.insert(mapping(kRun + 2 * kSize)));
  EXPECT_EQ(table.check(kAlice, kRun + 100, 3 * kSize - 100), PointerCheck::kOk);
  EXPECT_EQ(table.check(kAlice, kRun + kSize - 8, 16), PointerCheck::kOk);
  EXPECT_EQ(table.check(kAlice, kRun, 3 * kSize + 1), PointerCheck::kOutOfBounds);  // past the last
  // A gap, another client's mapping, or an ordinary allocation next to it ends the run.
  ASSERT_TRUE(table.insert(mapping(kRun + 4 * kSize)));
  EXPECT_EQ(table.check(kAlice, kRun + 2 * kSize, 2 * kSize + 1), PointerCheck::kOutOfBounds);
  ASSERT_TRUE(table.insert(mapping(kRun + 3 * kSize, kBob)));
  EXPECT_EQ(table.check(kAlice, kRun + 2 * kSize, kSize + 1), PointerCheck::kOutOfBounds);
  EXPECT_EQ(table.check(kBob, kRun + 3 * kSize, kSize + 1), PointerCheck::kOutOfBounds);
  ASSERT_TRUE(table.insert(user(kRun + 5 * kSize, kSize)));
  EXPECT_EQ(table.check(kAlice, kRun + 4 * kSize, kSize + 1), PointerCheck::kOutOfBounds);
  // An ordinary allocation never runs on into a mapping.
  ASSERT_TRUE(table.insert(mapping(kRun + 6 * kSize)));
  EXPECT_EQ(table.check(kAlice, kRun + 6 * kSize - 8, 16), PointerCheck::kOutOfBounds);
}

TEST(AllocationTable, EraseNeedsOwnerKindAndExactBase) {
  AllocationTable table;
  ASSERT_TRUE(table.insert(user(kBase, 1000)));
  ASSERT_TRUE(table.insert({kBase + 4096, 64, kAlice, AllocationKind::kModuleGlobal}));
  EXPECT_FALSE(table.erase(kBob, kBase, AllocationKind::kUser));
  EXPECT_FALSE(table.erase(kAlice, kBase + 8, AllocationKind::kUser));
  EXPECT_FALSE(table.erase(kAlice, kBase, AllocationKind::kModuleGlobal));
  EXPECT_FALSE(table.erase(kAlice, kBase + 4096, AllocationKind::kUser));
  EXPECT_EQ(table.size(), 2u);

  const auto removed = table.erase(kAlice, kBase, AllocationKind::kUser);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->size, 1000u);
  EXPECT_FALSE(table.erase(kAlice, kBase, AllocationKind::kUser));  // double erase
  EXPECT_EQ(table.check(kAlice, kBase, 1), PointerCheck::kUnknown);
}

TEST(AllocationTable, EraseAllAndByteTotalsArePerOwner) {
  AllocationTable table;
  ASSERT_TRUE(table.insert(user(kBase, 1000)));
  ASSERT_TRUE(table.insert({kBase + 4096, 64, kAlice, AllocationKind::kModuleGlobal}));
  ASSERT_TRUE(table.insert(user(kBase + 8192, 300, kBob)));
  EXPECT_EQ(table.bytesOwnedBy(kAlice), 1064u);
  EXPECT_EQ(table.bytesOwnedBy(kBob), 300u);

  EXPECT_EQ(table.eraseAll(kAlice).size(), 2u);
  EXPECT_EQ(table.bytesOwnedBy(kAlice), 0u);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.check(kBob, kBase + 8192, 300), PointerCheck::kOk);
  EXPECT_TRUE(table.eraseAll(kAlice).empty());
}

TEST(AllocationTable, FindReturnsTheContainingEntryOfAnyOwner) {
  AllocationTable table;
  ASSERT_TRUE(table.insert(user(kBase, 1000, kBob)));
  const auto found = table.find(kBase + 999);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->base, kBase);
  EXPECT_EQ(found->owner, kBob);
  EXPECT_FALSE(table.find(kBase + 1000));
  EXPECT_FALSE(table.find(kBase - 1));
}

TEST(AllocationTable, EveryVerdictHasItsOwnName) {
  std::set<std::string> names;
  for (PointerCheck verdict :
       {PointerCheck::kOk, PointerCheck::kNull, PointerCheck::kOverflow, PointerCheck::kProtected,
        PointerCheck::kUnknown, PointerCheck::kForeign, PointerCheck::kOutOfBounds}) {
    names.insert(toString(verdict));
  }
  EXPECT_EQ(names.size(), 7u);
}

}  // namespace
}  // namespace agileos::memmgr
