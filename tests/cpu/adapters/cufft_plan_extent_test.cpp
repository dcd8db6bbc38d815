// Extents of cuFFT plans (worker/adapters/cufft/plan_extent.h) against values computed by hand
// from the cuFFT data-layout rules, for every plan shape the adapter accepts.
#include <gtest/gtest.h>

#include "worker/adapters/cufft/plan_extent.h"

namespace agileos::adapters::cufft {
namespace {

PlanExtent extentOf(const PlanShape& shape) {
  std::string error;
  const std::optional<PlanExtent> extent = computeExtent(shape, &error);
  EXPECT_TRUE(extent.has_value()) << error;
  return extent.value_or(PlanExtent{});
}

PlanShape basic(std::vector<long long> n, cufftType type, long long batch = 1) {
  PlanShape shape;
  shape.n = std::move(n);
  shape.type = type;
  shape.batch = batch;
  return shape;
}

TEST(CufftPlanExtent, ComplexToComplexBasicLayouts) {
  // 1D, 8 points, cufftComplex (8 bytes): 64 bytes each side.
  PlanExtent e = extentOf(basic({8}, CUFFT_C2C));
  EXPECT_EQ(e.inputBytes, 64u);
  EXPECT_EQ(e.outputBytes, 64u);
  EXPECT_EQ(e.inPlaceBytes, 64u);
  // 3D 2x3x4, batch 5: 5 * 24 elements.
  e = extentOf(basic({2, 3, 4}, CUFFT_C2C, 5));
  EXPECT_EQ(e.inputBytes, 5u * 24 * 8);
  // Z2Z, 2D 7x11 (a prime size), batch 2, 16-byte elements.
  e = extentOf(basic({7, 11}, CUFFT_Z2Z, 2));
  EXPECT_EQ(e.outputBytes, 2u * 77 * 16);
}

TEST(CufftPlanExtent, RealTransformsHalveTheComplexSideAndPadInPlace) {
  // R2C 1D n = 8: 8 reals in, 5 complex out; in place, 2 * 5 reals = 40 bytes.
  PlanExtent e = extentOf(basic({8}, CUFFT_R2C));
  EXPECT_EQ(e.inputBytes, 32u);
  EXPECT_EQ(e.outputBytes, 40u);
  EXPECT_EQ(e.inPlaceBytes, 40u);
  // Odd n = 9: 5 complex out (9/2 + 1), 10 padded reals in place.
  e = extentOf(basic({9}, CUFFT_R2C, 3));
  EXPECT_EQ(e.inputBytes, 3u * 9 * 4);
  EXPECT_EQ(e.outputBytes, 3u * 5 * 8);
  EXPECT_EQ(e.inPlaceBytes, 3u * 10 * 4);
  // Z2D 2D 4x6: 4 x 4 complex (16 bytes) in, 4 x 6 doubles out; in place 4 x 8 doubles.
  e = extentOf(basic({4, 6}, CUFFT_Z2D));
  EXPECT_EQ(e.inputBytes, 16u * 16);
  EXPECT_EQ(e.outputBytes, 24u * 8);
  EXPECT_EQ(e.inPlaceBytes, 32u * 8);
  // D2Z 3D 3x5x7, batch 2: 105 doubles in, 3 x 5 x 4 complex out per batch.
  e = extentOf(basic({3, 5, 7}, CUFFT_D2Z, 2));
  EXPECT_EQ(e.inputBytes, 2u * 105 * 8);
  EXPECT_EQ(e.outputBytes, 2u * 60 * 16);
  EXPECT_EQ(e.inPlaceBytes, 2u * 3 * 5 * 8 * 8);
}

TEST(CufftPlanExtent, HalfAndBFloat16PlansCountTwoByteScalars) {
  for (Precision precision : {Precision::kHalf, Precision::kBFloat16}) {
    // C2C 1D n = 8, batch 3: 4-byte complex elements.
    PlanShape shape = basic({8}, CUFFT_C2C, 3);
    shape.precision = precision;
    PlanExtent e = extentOf(shape);
    EXPECT_EQ(e.inputBytes, 3u * 8 * 4);
    EXPECT_EQ(e.outputBytes, 3u * 8 * 4);
    // R2C 2D 4x6: 24 two-byte reals in, 4 x 4 complex out; in place 4 x 8 reals.
    shape = basic({4, 6}, CUFFT_R2C);
    shape.precision = precision;
    e = extentOf(shape);
    EXPECT_EQ(e.inputBytes, 24u * 2);
    EXPECT_EQ(e.outputBytes, 16u * 4);
    EXPECT_EQ(e.inPlaceBytes, 32u * 2);
    // C2R advanced: stride 2, distance 100 (complex elements), batch 2; real side embed 12, dist 30.
    shape = basic({10}, CUFFT_C2R, 2);
    shape.precision = precision;
    shape.input = {{6}, 2, 100};
    shape.output = {{12}, 1, 30};
    e = extentOf(shape);
    EXPECT_EQ(e.inputBytes, (100u + 2 * 5 + 1) * 4);
    EXPECT_EQ(e.outputBytes, (30u + 9 + 1) * 2);
  }
  // Only the single-precision transforms have a half or bfloat16 form.
  for (cufftType type : {CUFFT_Z2Z, CUFFT_D2Z, CUFFT_Z2D}) {
    PlanShape shape = basic({8}, type);
    shape.precision = Precision::kHalf;
    std::string error;
    EXPECT_FALSE(computeExtent(shape, &error).has_value()) << type;
    EXPECT_NE(error.find("precision"), std::string::npos) << error;
  }
  PlanShape shape = basic({8}, CUFFT_C2C);
  shape.precision = static_cast<Precision>(7);
  std::string error;
  EXPECT_FALSE(computeExtent(shape, &error).has_value());
}

TEST(CufftPlanExtent, AdvancedLayoutsFollowEmbedStrideAndDistance) {
  // C2C 2D n = {4, 5}; input embed {4, 7}, stride 2, dist 100, batch 3:
  //   (3 - 1) * 100 + 2 * (3 * 7 + 4) + 1 = 251 elements.
  // output embed {4, 5}, stride 1, dist 20: 2 * 20 + (3 * 5 + 4) + 1 = 60 elements.
  PlanShape shape = basic({4, 5}, CUFFT_C2C, 3);
  shape.input = {{4, 7}, 2, 100};
  shape.output = {{4, 5}, 1, 20};
  PlanExtent e = extentOf(shape);
  EXPECT_EQ(e.inputBytes, 251u * 8);
  EXPECT_EQ(e.outputBytes, 60u * 8);
  EXPECT_EQ(e.inPlaceBytes, 251u * 8);
  // R2C 1D n = 10, batch 4: input embed {10}, dist 10: 3 * 10 + 9 + 1 = 40 reals;
  // output embed {6}, dist 6, over 10/2 + 1 = 6 complex: 3 * 6 + 5 + 1 = 24 complex.
  shape = basic({10}, CUFFT_R2C, 4);
  shape.input = {{10}, 1, 10};
  shape.output = {{6}, 1, 6};
  e = extentOf(shape);
  EXPECT_EQ(e.inputBytes, 40u * 4);
  EXPECT_EQ(e.outputBytes, 24u * 8);
  // Interleaved batches (dist 1, stride = batch): 3 transforms of 16 points.
  shape = basic({16}, CUFFT_C2C, 3);
  shape.input = {{16}, 3, 1};
  shape.output = {{16}, 3, 1};
  e = extentOf(shape);
  EXPECT_EQ(e.inputBytes, (2u * 1 + 3 * 15 + 1) * 8);
  // A null embed on one side means the basic layout on both: strides are ignored.
  shape = basic({8}, CUFFT_C2C, 2);
  shape.input = {{}, 5, 1000};
  shape.output = {{8}, 7, 999};
  e = extentOf(shape);
  EXPECT_EQ(e.inputBytes, 2u * 8 * 8);
  EXPECT_EQ(e.outputBytes, 2u * 8 * 8);
}

TEST(CufftPlanExtent, WhatCannotBeBoundedIsRefused) {
  std::string error;
  EXPECT_FALSE(computeExtent(basic({}, CUFFT_C2C), &error));
  EXPECT_FALSE(computeExtent(basic({2, 2, 2, 2}, CUFFT_C2C), &error));
  EXPECT_FALSE(computeExtent(basic({0}, CUFFT_C2C), &error));
  EXPECT_FALSE(computeExtent(basic({-8}, CUFFT_C2C), &error));
  EXPECT_FALSE(computeExtent(basic({8}, CUFFT_C2C, 0), &error));
  EXPECT_FALSE(computeExtent(basic({8}, static_cast<cufftType>(0x77)), &error));
  EXPECT_FALSE(computeExtent(basic({1ll << 40, 1ll << 40}, CUFFT_C2C), &error));
  EXPECT_NE(error.find("too large"), std::string::npos) << error;
  PlanShape shape = basic({8}, CUFFT_C2C, 2);
  shape.input = {{8}, -1, 8};
  shape.output = {{8}, 1, 8};
  EXPECT_FALSE(computeExtent(shape, &error)) << "a negative stride";
  shape.input = {{8}, 1, -8};
  EXPECT_FALSE(computeExtent(shape, &error)) << "a negative distance";
  shape.input = {{8}, 1, 1ll << 62};
  EXPECT_FALSE(computeExtent(shape, &error)) << "a distance whose extent overflows";
  shape.input = {{8, 8}, 1, 8};
  EXPECT_FALSE(computeExtent(shape, &error)) << "an embed of the wrong rank";
}

}  // namespace
}  // namespace agileos::adapters::cufft
