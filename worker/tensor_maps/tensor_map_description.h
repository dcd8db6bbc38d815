// A tensor map's description as the client asked for it (cuTensorMapEncodeTiled, ...Im2col,
// ...Im2colWide), and the global range the map can reach.
//
// The copy engine reads a tensor through its map only at coordinates inside the map's global
// dimensions: a load fills elements outside them (zero or NaN), a store or reduction skips them
// (PTX ISA, cp.async.bulk.tensor: "out-of-bound accesses"). An element at coordinates
// (c0, ..., c[r-1]) lies at globalAddress + c0 * elementBytes + sum over i >= 1 of c[i] *
// globalStrides[i-1], so every byte a map can reach lies in
//     [globalAddress, globalAddress + (dim0 * elementBytes) + sum over i >= 1 of (dim[i] - 1) * stride[i-1]),
// whatever the box, element strides, swizzle, im2col corners or the coordinates a kernel
// passes. validate() checks what the driver documents for each field that this bound depends
// on (rank, dimensions, strides, element size), every enum against its members, and computes
// the range with every step overflow-checked; the driver checks the rest again when it encodes.
// Sub-byte packed element types (16U4_ALIGN8B, ...) are not admitted yet (not supported).
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <string>

namespace agileos::worker {

struct TensorMapDescription {
  enum class Kind : std::uint8_t { kTiled, kIm2col, kIm2colWide };
  Kind kind = Kind::kTiled;
  std::uint32_t dataType = 0;  // CUtensorMapDataType
  std::uint32_t rank = 0;
  std::uint64_t globalAddress = 0;
  std::array<std::uint64_t, 5> globalDim{};
  std::array<std::uint64_t, 4> globalStrides{};  // bytes, of dimensions 1 .. rank-1
  std::array<std::uint32_t, 5> boxDim{};         // kTiled
  std::array<std::uint32_t, 5> elementStrides{};
  std::uint32_t interleave = 0;
  std::uint32_t swizzle = 0;
  std::uint32_t l2Promotion = 0;
  std::uint32_t oobFill = 0;
  std::array<int, 3> pixelBoxLowerCorner{};  // kIm2col: rank - 2
  std::array<int, 3> pixelBoxUpperCorner{};
  int pixelBoxLowerCornerWidth = 0;  // kIm2colWide
  int pixelBoxUpperCornerWidth = 0;
  std::uint32_t channelsPerPixel = 0;  // kIm2col, kIm2colWide
  std::uint32_t pixelsPerColumn = 0;
  std::uint32_t wideMode = 0;  // kIm2colWide: CUtensorMapIm2ColWideMode
};

struct TensorMapVerdict {
  CUresult result = CUDA_SUCCESS;  // CUDA_ERROR_INVALID_VALUE, or NOT_SUPPORTED for a packed type
  std::string reason;              // when result != CUDA_SUCCESS
  std::uint64_t extentBytes = 0;   // the reachable range from globalAddress, when CUDA_SUCCESS
};

// Bytes of one element of a CUtensorMapDataType, 0 for a type not admitted.
std::uint32_t tensorMapElementBytes(std::uint32_t dataType);

TensorMapVerdict validate(const TensorMapDescription& description);

}  // namespace agileos::worker
