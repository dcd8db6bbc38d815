#include "worker/adapters/cufft/plan_extent.h"

#include <algorithm>

namespace agileos::adapters::cufft {
namespace {

bool isReal(cufftType type, bool input) {
  switch (type) {
    case CUFFT_R2C:
    case CUFFT_D2Z:
      return input;
    case CUFFT_C2R:
    case CUFFT_Z2D:
      return !input;
    default:
      return false;
  }
}

bool isRealTransform(cufftType type) {
  return type == CUFFT_R2C || type == CUFFT_D2Z || type == CUFFT_C2R || type == CUFFT_Z2D;
}

bool isDouble(cufftType type) { return type == CUFFT_D2Z || type == CUFFT_Z2D || type == CUFFT_Z2Z; }

bool mul(long long a, long long b, long long* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(long long a, long long b, long long* out) { return !__builtin_add_overflow(a, b, out); }

// Elements spanned by one side: (batch - 1) * dist + stride * maxLinear + 1.
bool sideElements(const std::vector<long long>& logical, const std::vector<long long>& embed,
                  long long stride, long long dist, long long batch, long long* elements) {
  long long offset = 0, scale = 1;
  for (std::size_t i = logical.size(); i-- > 0;) {
    long long term = 0;
    if (!mul(logical[i] - 1, scale, &term) || !add(offset, term, &offset)) return false;
    if (!mul(scale, embed[i], &scale)) return false;
  }
  long long batches = 0;
  if (!mul(offset, stride, &offset) || !mul(batch - 1, dist, &batches) || !add(offset, batches, &offset)) {
    return false;
  }
  return add(offset, 1, elements);
}

}  // namespace

std::vector<long long> logicalShape(const PlanShape& shape, bool input) {
  std::vector<long long> dims = shape.n;
  if (isRealTransform(shape.type) && !isReal(shape.type, input)) dims.back() = dims.back() / 2 + 1;
  return dims;
}

bool isKnownType(long long type) {
  switch (type) {
    case CUFFT_R2C:
    case CUFFT_C2R:
    case CUFFT_C2C:
    case CUFFT_D2Z:
    case CUFFT_Z2D:
    case CUFFT_Z2Z:
      return true;
    default:
      return false;
  }
}

bool isKnownPrecision(cufftType type, Precision precision) {
  switch (precision) {
    case Precision::kStandard:
      return isKnownType(type);
    case Precision::kHalf:
    case Precision::kBFloat16:
      return type == CUFFT_C2C || type == CUFFT_R2C || type == CUFFT_C2R;
  }
  return false;
}

namespace {

// The bytes of one real scalar of the shape's precision.
std::uint32_t scalarBytes(const PlanShape& shape) {
  if (shape.precision != Precision::kStandard) return 2;
  return isDouble(shape.type) ? 8 : 4;
}

std::uint32_t elementBytes(const PlanShape& shape, bool input) {
  return isReal(shape.type, input) ? scalarBytes(shape) : 2 * scalarBytes(shape);
}

}  // namespace

std::optional<PlanExtent> computeExtent(const PlanShape& shape, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<PlanExtent> {
    *error = std::move(why);
    return std::nullopt;
  };
  if (!isKnownType(shape.type)) return fail("unknown transform type");
  if (!isKnownPrecision(shape.type, shape.precision)) return fail("unknown precision for the transform type");
  if (shape.n.empty() || shape.n.size() > 3) return fail("rank must be 1, 2 or 3");
  for (long long size : shape.n) {
    if (size <= 0) return fail("a transform size must be positive");
  }
  if (shape.batch <= 0) return fail("the batch count must be positive");
  const std::size_t rank = shape.n.size();
  const bool advanced = !shape.input.embed.empty() && !shape.output.embed.empty();

  long long elements[2] = {0, 0};
  for (int side = 0; side < 2; ++side) {
    const bool input = side == 0;
    const SideLayout& layout = input ? shape.input : shape.output;
    std::vector<long long> logical = logicalShape(shape, input);
    std::vector<long long> embed = logical;
    long long stride = 1, dist = 0;
    if (advanced) {
      if (layout.embed.size() != rank) return fail("an embed array must have one entry per dimension");
      for (long long e : layout.embed) {
        if (e <= 0) return fail("embed sizes must be positive");
      }
      if (layout.stride <= 0) return fail("strides must be positive");
      if (layout.dist < 0) return fail("distances must not be negative");
      embed = layout.embed;
      stride = layout.stride;
      dist = layout.dist;
    } else {
      long long tight = 1;
      for (long long size : logical) {
        if (!mul(tight, size, &tight)) return fail("the transform is too large");
      }
      dist = tight;
    }
    if (!sideElements(logical, embed, stride, dist, shape.batch, &elements[side])) {
      return fail("the transform's extent overflows");
    }
  }
  PlanExtent extent;
  long long bytes = 0;
  if (!mul(elements[0], elementBytes(shape, true), &bytes)) return fail("the input extent overflows");
  extent.inputBytes = static_cast<std::uint64_t>(bytes);
  if (!mul(elements[1], elementBytes(shape, false), &bytes)) return fail("the output extent overflows");
  extent.outputBytes = static_cast<std::uint64_t>(bytes);
  extent.inPlaceBytes = std::max(extent.inputBytes, extent.outputBytes);
  if (!advanced && isRealTransform(shape.type)) {
    // In place, the real side is padded to 2 * (n/2 + 1) reals in its last dimension:
    // exactly the complex side's bytes, batch for batch.
    std::vector<long long> padded = shape.n;
    padded.back() = 2 * (padded.back() / 2 + 1);
    long long reals = shape.batch;
    for (long long size : padded) {
      if (!mul(reals, size, &reals)) return fail("the transform is too large");
    }
    const std::uint32_t realBytes = scalarBytes(shape);
    if (!mul(reals, realBytes, &bytes)) return fail("the transform is too large");
    extent.inPlaceBytes = std::max(extent.inPlaceBytes, static_cast<std::uint64_t>(bytes));
  }
  return extent;
}

}  // namespace agileos::adapters::cufft
