#include "worker/tensor_maps/tensor_map_description.h"

#include <limits>

namespace agileos::worker {
namespace {

constexpr std::uint64_t kMaxDim = 1ull << 32;     // globalDim[i] <= 2^32
constexpr std::uint64_t kMaxStride = 1ull << 40;  // globalStrides[i] < 2^40
constexpr std::uint32_t kMaxBoxDim = 256;         // boxDim[i] <= 256
constexpr std::uint32_t kMaxElementStride = 8;    // elementStrides[i] <= 8

TensorMapVerdict refuse(std::string reason, CUresult result = CUDA_ERROR_INVALID_VALUE) {
  return {result, std::move(reason), 0};
}

bool addChecked(std::uint64_t a, std::uint64_t b, std::uint64_t* sum) {
  if (a > std::numeric_limits<std::uint64_t>::max() - b) return false;
  *sum = a + b;
  return true;
}

bool mulChecked(std::uint64_t a, std::uint64_t b, std::uint64_t* product) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  *product = a * b;
  return true;
}

}  // namespace

std::uint32_t tensorMapElementBytes(std::uint32_t dataType) {
  switch (dataType) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

TensorMapVerdict validate(const TensorMapDescription& d) {
  using Kind = TensorMapDescription::Kind;
  if (d.dataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B ||
      d.dataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ||
      d.dataType == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) {
    return refuse("packed sub-byte tensor map element types are not supported yet", CUDA_ERROR_NOT_SUPPORTED);
  }
  const std::uint32_t element = tensorMapElementBytes(d.dataType);
  if (element == 0) return refuse("an unknown tensor map data type");
  const std::uint32_t minRank =
      d.kind == Kind::kTiled && d.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 1 : 3;
  if (d.rank < minRank || d.rank > 5)
    return refuse("a tensor map rank outside " + std::to_string(minRank) + "..5");
  if (d.interleave > CU_TENSOR_MAP_INTERLEAVE_32B || d.swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
      d.l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
      d.oobFill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA ||
      (d.kind == Kind::kIm2colWide && d.wideMode > CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128)) {
    return refuse("a tensor map enum value that is not one of its members");
  }
  // The address and strides are multiples of 16 bytes (32 with 32-byte interleave).
  const std::uint64_t alignment = d.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (d.globalAddress == 0 || d.globalAddress % alignment != 0)
    return refuse("a tensor map's global address must be non-zero and " + std::to_string(alignment) +
                  "-byte aligned");
  for (std::uint32_t i = 0; i < d.rank; ++i) {
    if (d.globalDim[i] == 0 || d.globalDim[i] > kMaxDim)
      return refuse("a tensor map dimension outside 1..2^32");
    if (d.elementStrides[i] == 0 || d.elementStrides[i] > kMaxElementStride)
      return refuse("a tensor map element stride outside 1..8");
    if (d.kind == Kind::kTiled && (d.boxDim[i] == 0 || d.boxDim[i] > kMaxBoxDim))
      return refuse("a tensor map box dimension outside 1..256");
  }
  for (std::uint32_t i = 0; i + 1 < d.rank; ++i) {
    if (d.globalStrides[i] % alignment != 0 || d.globalStrides[i] >= kMaxStride)
      return refuse("a tensor map stride that is not a multiple of " + std::to_string(alignment) +
                    " bytes below 2^40");
  }
  // The reachable range: dim0 * element + sum (dim[i] - 1) * stride[i-1], every step checked.
  std::uint64_t extent = 0;
  if (!mulChecked(d.globalDim[0], element, &extent)) return refuse("a tensor map whose extent overflows");
  for (std::uint32_t i = 1; i < d.rank; ++i) {
    std::uint64_t span = 0;
    if (!mulChecked(d.globalDim[i] - 1, d.globalStrides[i - 1], &span) || !addChecked(extent, span, &extent))
      return refuse("a tensor map whose extent overflows");
  }
  std::uint64_t end = 0;
  if (!addChecked(d.globalAddress, extent, &end)) return refuse("a tensor map whose range wraps around");
  return {CUDA_SUCCESS, {}, extent};
}

}  // namespace agileos::worker
