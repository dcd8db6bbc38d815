// The arithmetic the worker bounds arrays and copies with (array_geometry.h): on untrusted numbers,
// so every edge case of overflow and extent is pinned here.
#include "worker/array_texture/array_geometry.h"

#include <gtest/gtest.h>

#include <limits>

namespace agileos::worker::arrays {
namespace {

CUDA_ARRAY3D_DESCRIPTOR floats(std::size_t width, std::size_t height, std::size_t depth = 0,
                               unsigned flags = 0) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = width;
  d.Height = height;
  d.Depth = depth;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  d.Flags = flags;
  return d;
}

TEST(ArrayGeometry, ElementSizesOfTheAdmittedFormatsOnly) {
  EXPECT_EQ(elementBytes(CU_AD_FORMAT_UNSIGNED_INT8, 4), 4u);
  EXPECT_EQ(elementBytes(CU_AD_FORMAT_HALF, 2), 4u);
  EXPECT_EQ(elementBytes(CU_AD_FORMAT_FLOAT, 4), 16u);
  EXPECT_EQ(elementBytes(CU_AD_FORMAT_FLOAT, 3), 0u);
  EXPECT_EQ(elementBytes(CU_AD_FORMAT_NV12, 1), 0u);
}

TEST(ArrayGeometry, LevelsHalveWidthAndHeightButKeepLayers) {
  const Extent level = levelExtent(floats(64, 16, 5, CUDA_ARRAY3D_LAYERED), 3);
  EXPECT_EQ(level.width, 8u);
  EXPECT_EQ(level.height, 2u);
  EXPECT_EQ(level.depth, 5u);
  const Extent volume = levelExtent(floats(64, 16, 8), 4);
  EXPECT_EQ(volume.width, 4u);
  EXPECT_EQ(volume.height, 1u);
  EXPECT_EQ(volume.depth, 1u);
  EXPECT_EQ(levelExtent(floats(10, 0), 0).height, 1u) << "a 1D array has one row";
  EXPECT_TRUE(checkDescriptor(floats(64, 16), 7).empty());
  EXPECT_FALSE(checkDescriptor(floats(64, 16), 8).empty());
}

TEST(ArrayGeometry, TheChargeCoversPaddedRowsOfEveryLevelRoundedLikeModuleMemory) {
  EXPECT_EQ(chargedBytes(floats(4, 4), 0), 64u << 10) << "small arrays: 64 KiB";
  // 1000 floats = 4000 bytes a row, padded to 4096; 1024 rows: 4 MiB exactly.
  EXPECT_EQ(chargedBytes(floats(1000, 1024), 0), 4u << 20);
  // 3 MiB + a little is rounded up to 4 MiB.
  EXPECT_EQ(chargedBytes(floats(1024, 769), 0), 4u << 20);
  // Two levels of 512 x 512 floats: 1 MiB + 256 KiB, above 1 MiB: 2 MiB.
  EXPECT_EQ(chargedBytes(floats(512, 512), 2), 2u << 20);
  // The largest extent admitted stays far from wrapping.
  CUDA_ARRAY3D_DESCRIPTOR largest = floats(kMaxArrayWidth, kMaxArrayWidth, kMaxArrayDepth);
  largest.NumChannels = 4;
  EXPECT_GT(chargedBytes(largest, 19), 0u);
}

TEST(ArrayGeometry, BoxesStayInsideTheArrayOnElementBoundaries) {
  const Extent extent{8, 4, 2};
  EXPECT_TRUE(checkArrayBox(extent, 4, {0, 0, 0, 32, 4, 2}).empty());
  EXPECT_TRUE(checkArrayBox(extent, 4, {28, 3, 1, 4, 1, 1}).empty());
  EXPECT_FALSE(checkArrayBox(extent, 4, {32, 0, 0, 4, 1, 1}).empty()) << "past the row";
  EXPECT_FALSE(checkArrayBox(extent, 4, {2, 0, 0, 4, 1, 1}).empty()) << "inside an element";
  EXPECT_FALSE(checkArrayBox(extent, 4, {0, 4, 0, 4, 1, 1}).empty()) << "past the last row";
  EXPECT_FALSE(checkArrayBox(extent, 4, {0, 0, 1, 4, 1, 2}).empty()) << "past the last slice";
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  EXPECT_FALSE(checkArrayBox(extent, 4, {0, kMax, 0, 4, 2, 1}).empty()) << "a wrapping row";
}

TEST(ArrayGeometry, PitchedSpansAreExactAndRefuseOverflow) {
  // Rows of 100 bytes 128 apart, slices of 10 rows: (1, 2, 3) to 50 x 4 x 2.
  EXPECT_EQ(pitchedSpan(128, 10, {1, 2, 3, 50, 4, 2}), ((3 + 1) * 10 + 2 + 3) * 128u + 1 + 50);
  EXPECT_FALSE(pitchedSpan(128, 10, {100, 0, 0, 29, 1, 1})) << "a row past its pitch";
  EXPECT_FALSE(pitchedSpan(128, 10, {0, 8, 0, 16, 3, 2})) << "slices overlapping";
  EXPECT_TRUE(pitchedSpan(128, 10, {0, 8, 0, 16, 3, 1})) << "one slice may use any rows";
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  EXPECT_FALSE(pitchedSpan(1ull << 40, 1ull << 30, {0, 0, 0, 16, 1, 1ull << 20})) << "overflow";
  EXPECT_FALSE(pitchedSpan(kMax, 1, {0, 0, 0, 1, 2, 1}));
  EXPECT_EQ(pitchedSpan(128, 10, {0, 0, 0, 0, 4, 2}), 0u) << "nothing to copy";
}

}  // namespace
}  // namespace agileos::worker::arrays
