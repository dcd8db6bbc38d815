// ManagedHints (client/session/managed_hint_pages.h): hints apply to whole 4 KiB pages, and a
// range's common hints hold only what every page it touches shares, whatever the runs and gaps
// between earlier hints look like.
#include "client/session/managed_hint_pages.h"

#include <gtest/gtest.h>

namespace agileos::client {
namespace {

constexpr std::uint64_t kPage = ManagedHints::kPageBytes;
const HintLocation kDevice{cudaMemLocationTypeDevice, 0};
const HintLocation kHost{cudaMemLocationTypeHost, 0};

void setReadMostly(ManagedHints& hints, std::uint64_t offset, std::uint64_t bytes, bool on) {
  hints.apply(offset, bytes, [on](PageHints& page) { page.readMostly = on; });
}

TEST(ManagedHintPages, NothingSetIsTheDefaultEverywhere) {
  const ManagedHints hints;
  EXPECT_EQ(hints.common(0, 1), PageHints{});
  EXPECT_EQ(hints.common(12345, 100 * kPage), PageHints{});
}

TEST(ManagedHintPages, AHintCoversEveryPageItsRangeTouches) {
  ManagedHints hints;
  setReadMostly(hints, kPage + 10, 2, true);  // two bytes inside page 1
  EXPECT_TRUE(hints.common(kPage, kPage).readMostly) << "the whole page";
  EXPECT_TRUE(hints.common(2 * kPage - 1, 1).readMostly) << "its last byte";
  EXPECT_FALSE(hints.common(kPage - 1, 1).readMostly) << "the page before";
  EXPECT_FALSE(hints.common(2 * kPage, 1).readMostly) << "the page after";
  EXPECT_FALSE(hints.common(kPage - 1, 2).readMostly) << "a range over the page before too";
  // A range that ends on a page boundary does not touch the next page.
  setReadMostly(hints, 4 * kPage, kPage, true);
  EXPECT_FALSE(hints.common(5 * kPage, 1).readMostly);
}

TEST(ManagedHintPages, OverlappingHintsSplitRunsAtPageBoundaries) {
  ManagedHints hints;
  setReadMostly(hints, 0, 10 * kPage, true);
  hints.apply(3 * kPage, 4 * kPage, [](PageHints& page) { page.preferred = kDevice; });  // pages 3..6
  setReadMostly(hints, 5 * kPage, 1, false);                                             // page 5
  for (std::uint64_t page = 0; page < 10; ++page) {
    SCOPED_TRACE(page);
    const PageHints one = hints.common(page * kPage, kPage);
    EXPECT_EQ(one.readMostly, page != 5);
    EXPECT_EQ(one.preferred, page >= 3 && page <= 6 ? kDevice : HintLocation{});
  }
  EXPECT_EQ(hints.common(3 * kPage, 4 * kPage).preferred, kDevice);
  EXPECT_EQ(hints.common(2 * kPage, 2 * kPage).preferred, HintLocation{}) << "page 2 has none";
  EXPECT_FALSE(hints.common(4 * kPage, 2 * kPage).readMostly) << "page 5 is not";
  EXPECT_TRUE(hints.common(6 * kPage, 4 * kPage).readMostly);
}

TEST(ManagedHintPages, AHintOverGapsAndRunsReachesEveryPage) {
  ManagedHints hints;
  hints.apply(2 * kPage, 1, [](PageHints& page) { page.accessedByDevice = true; });  // page 2
  hints.apply(6 * kPage, 1, [](PageHints& page) { page.accessedByDevice = true; });  // page 6
  hints.apply(0, 9 * kPage, [](PageHints& page) { page.lastPrefetch = kHost; });     // gaps and both runs
  EXPECT_EQ(hints.common(0, 9 * kPage).lastPrefetch, kHost);
  EXPECT_FALSE(hints.common(0, 9 * kPage).accessedByDevice) << "only pages 2 and 6";
  EXPECT_TRUE(hints.common(2 * kPage, kPage).accessedByDevice);
  EXPECT_TRUE(hints.common(6 * kPage, kPage).accessedByDevice);
  EXPECT_EQ(hints.common(9 * kPage, 1).lastPrefetch, HintLocation{}) << "page 9 was never prefetched";
  hints.apply(4 * kPage, 1, [](PageHints& page) { page.lastPrefetch = kDevice; });
  EXPECT_EQ(hints.common(0, 9 * kPage).lastPrefetch, HintLocation{}) << "pages disagree: none";
  EXPECT_EQ(hints.common(4 * kPage, kPage).lastPrefetch, kDevice);
  EXPECT_EQ(hints.common(5 * kPage, 4 * kPage).lastPrefetch, kHost);
}

TEST(ManagedHintPages, TheLastPageOfAHugeRangeIsCounted) {
  ManagedHints hints;
  const std::uint64_t huge = std::uint64_t{1} << 40;
  setReadMostly(hints, 0, huge, true);
  EXPECT_TRUE(hints.common(huge - 1, 1).readMostly);
  EXPECT_FALSE(hints.common(huge, 1).readMostly);
  EXPECT_TRUE(hints.common(0, huge).readMostly);
}

}  // namespace
}  // namespace agileos::client
