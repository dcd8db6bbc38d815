// How many bytes a cuFFT plan reads and writes from the start of its input and output
// buffers (issue 6): the trusted adapter checks, before any execution, that each buffer
// lies inside one live allocation of the client over this whole extent.
//
// A plan is n[0..rank) (rank 1..3), a transform type, a batch count and, per side, either
// the basic layout (tightly packed) or the advanced one (embed, stride, dist) of
// cufftPlanMany / cufftMakePlanMany64. The element at batch b, position x of one side is
//   basic:    b * prod(L) + linear(x over L)
//   advanced: b * dist + stride * sum_i x_i * prod_{j>i} embed[j]
// where L is that side's logical shape: n, except that the complex side of a real
// transform holds n[rank-1]/2 + 1 in its last dimension. Every coefficient is positive, so
// the largest offset is at x_i = L_i - 1, and the extent is that offset + 1 elements.
// As in cuFFT, a null embed on either side means the basic layout on both (strides and
// distances are then ignored).
//
// In place (the same pointer for input and output), the real side of a basic-layout
// real transform is padded: its last dimension holds 2 * (n/2 + 1) reals. One buffer then
// has to hold both sides: inPlaceBytes.
//
// All arithmetic is checked: a shape whose extent overflows 63 bits, a non-positive size,
// stride or embed, or a negative distance is refused with the reason.
#pragma once

#include <cufft.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/adapters/cufft_operations.h"

namespace agileos::adapters::cufft {

struct SideLayout {
  std::vector<long long> embed;  // empty: the basic layout
  long long stride = 1;
  long long dist = 0;
};

struct PlanShape {
  std::vector<long long> n;  // rank 1..3
  cufftType type = CUFFT_C2C;
  // kHalf and kBFloat16 (typed plans) only with CUFFT_C2C, CUFFT_R2C or CUFFT_C2R: elements of 2
  // (real) and 4 (complex) bytes.
  Precision precision = Precision::kStandard;
  long long batch = 1;
  SideLayout input;
  SideLayout output;
};

struct PlanExtent {
  std::uint64_t inputBytes = 0;    // out of place: what idata must hold
  std::uint64_t outputBytes = 0;   // out of place: what odata must hold
  std::uint64_t inPlaceBytes = 0;  // in place: what the one buffer must hold
};

// The extents of `shape`, or nullopt and *error (which names the offending value).
std::optional<PlanExtent> computeExtent(const PlanShape& shape, std::string* error);

// The logical shape of one side of `shape` (input or output): n, except that the complex side of
// a real transform holds n[rank-1]/2 + 1 in its last dimension.
std::vector<long long> logicalShape(const PlanShape& shape, bool input);

// Whether `type` is one of cuFFT's six transform types (an untrusted value).
bool isKnownType(long long type);

// Whether `precision` may go with `type`: kStandard with any known type, half and bfloat16 with
// the single-precision transforms only.
bool isKnownPrecision(cufftType type, Precision precision);

}  // namespace agileos::adapters::cufft
