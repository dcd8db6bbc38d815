// The layout and index checks of proto/shm: geometry, and the verdicts on indices a
// hostile peer could publish.
#include "proto/shm/ring_layout.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/shm/handshake.h"
#include "proto/shm/mapped_region.h"
#include "proto/shm/ring_index.h"

namespace agileos::shm {
namespace {

TEST(RingLayout, GeometryPlacesPartsInOrderInsideTheRegion) {
  RegionGeometry g;
  ASSERT_TRUE(computeGeometry(RegionSizes{}, &g));
  EXPECT_GE(g.requestRingOffset, sizeof(ControlBlock));
  EXPECT_EQ(g.completionRingOffset, g.requestRingOffset + std::uint64_t{RegionSizes{}.slotCount} * 4096);
  EXPECT_GE(g.replyArenaOffset, g.requestArenaOffset + g.requestArenaBytes);
  EXPECT_GE(g.stagingOffset, g.replyArenaOffset + g.replyArenaBytes);
  EXPECT_EQ(g.stagingOffset % 4096, 0u) << "staging is registered with the GPU page by page";
  EXPECT_GE(g.regionBytes, g.stagingOffset + g.stagingBytes);
  EXPECT_TRUE(validGeometry(g, g.regionBytes));
  EXPECT_FALSE(validGeometry(g, g.regionBytes - 1));  // a mapping smaller than the geometry claims
}

TEST(RingLayout, UnusableSizesAreRefused) {
  RegionGeometry g;
  RegionSizes sizes;
  sizes.slotCount = 3;  // not a power of two
  EXPECT_FALSE(computeGeometry(sizes, &g));
  sizes = {};
  sizes.slotBytes = sizeof(SlotHeader);  // no payload
  EXPECT_FALSE(computeGeometry(sizes, &g));
  sizes = {};
  sizes.slotBytes = 4096 + 8;  // not cache-line sized
  EXPECT_FALSE(computeGeometry(sizes, &g));
}

TEST(RingLayout, ClientRefusesAForgedGeometry) {
  RegionGeometry g;
  ASSERT_TRUE(computeGeometry(RegionSizes{}, &g));
  RegionGeometry forged = g;
  forged.magic ^= 1;
  EXPECT_FALSE(validGeometry(forged, g.regionBytes));
  forged = g;
  forged.replyArenaBytes = ~0ull;  // would reach far past the mapping
  EXPECT_FALSE(validGeometry(forged, g.regionBytes));
  forged = g;
  forged.completionRingOffset = g.requestRingOffset;  // overlapping rings
  EXPECT_FALSE(validGeometry(forged, g.regionBytes));
  forged = g;
  forged.requestRingOffset = 0;  // over the control block
  EXPECT_FALSE(validGeometry(forged, g.regionBytes));
}

TEST(RingLayout, RangeWithinHasNoOverflow) {
  EXPECT_TRUE(rangeWithin(0, 10, 10));
  EXPECT_TRUE(rangeWithin(10, 0, 10));
  EXPECT_FALSE(rangeWithin(11, 0, 10));
  EXPECT_FALSE(rangeWithin(5, 6, 10));
  EXPECT_FALSE(rangeWithin(1, ~0ull, 10));  // offset + length wraps to 0
}

TEST(RingIndex, ConsumerVerdicts) {
  EXPECT_EQ(entriesToConsume(5, 5, 5, 4).count, 0u);
  EXPECT_EQ(entriesToConsume(9, 5, 5, 4).count, 4u);  // a full ring
  EXPECT_EQ(entriesToConsume(10, 5, 5, 4).verdict, IndexVerdict::kTooFarAhead);
  EXPECT_EQ(entriesToConsume(4, 5, 4, 4).verdict, IndexVerdict::kBackwards);  // below what it published
  EXPECT_EQ(entriesToConsume(3, 0, 4, 4).verdict, IndexVerdict::kBackwards);  // below what was consumed
  EXPECT_EQ(entriesToConsume(~0ull, 0, 0, 4).verdict, IndexVerdict::kTooFarAhead);
}

TEST(RingIndex, ProducerVerdicts) {
  EXPECT_EQ(slotsFreeToProduce(0, 0, 0, 4).count, 4u);
  EXPECT_EQ(slotsFreeToProduce(0, 0, 4, 4).count, 0u);  // full
  EXPECT_EQ(slotsFreeToProduce(3, 0, 4, 4).count, 3u);
  EXPECT_EQ(slotsFreeToProduce(5, 0, 4, 4).verdict, IndexVerdict::kTooFarAhead);  // consumed the future
  EXPECT_EQ(slotsFreeToProduce(2, 3, 4, 4).verdict, IndexVerdict::kBackwards);
}

TEST(Handshake, SocketPathIsDerivedFromTheGrpcEndpoint) {
  EXPECT_EQ(shmSocketPathFor("unix:/x/worker-3.sock"), "/x/worker-3.shm.sock");
  EXPECT_EQ(shmSocketPathFor("unix:/x/w"), "/x/w.shm.sock");
  EXPECT_EQ(shmSocketPathFor("localhost:5000"), std::nullopt);
  EXPECT_EQ(shmSocketPathFor("unix:"), std::nullopt);
}

TEST(MappedRegion, CreatedRegionIsSealedAgainstResizing) {
  std::string error;
  RegionSizes sizes;
  sizes.requestArenaBytes = sizes.replyArenaBytes = 1 << 20;
  auto region = MappedRegion::create(sizes, &error);
  ASSERT_NE(region, nullptr) << error;
  // The client holds the same fd: shrinking it would make the worker's accesses SIGBUS.
  EXPECT_NE(::ftruncate(region->fd(), 4096), 0);
  EXPECT_NE(::ftruncate(region->fd(), static_cast<off_t>(region->size() * 2)), 0);
  EXPECT_EQ(region->control().geometry.magic, kRegionMagic);
}

TEST(MappedRegion, AttachValidatesWhatItMaps) {
  std::string error;
  RegionSizes sizes;
  sizes.requestArenaBytes = sizes.replyArenaBytes = 1 << 20;
  auto region = MappedRegion::create(sizes, &error);
  ASSERT_NE(region, nullptr) << error;
  auto attached = MappedRegion::attach(::dup(region->fd()), &error);
  ASSERT_NE(attached, nullptr) << error;
  EXPECT_EQ(attached->geometry().regionBytes, region->geometry().regionBytes);

  region->control().geometry.version = kRegionVersion + 1;
  EXPECT_EQ(MappedRegion::attach(::dup(region->fd()), &error), nullptr);
  EXPECT_NE(error.find("version"), std::string::npos);

  const int notARegion = ::memfd_create("tiny", MFD_CLOEXEC);
  ASSERT_GE(notARegion, 0);
  EXPECT_EQ(MappedRegion::attach(notARegion, &error), nullptr);  // empty file: refused, fd closed
}

}  // namespace
}  // namespace agileos::shm
