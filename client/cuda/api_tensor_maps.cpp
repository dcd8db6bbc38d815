// Tensor maps (cuTensorMapEncodeTiled, ...Im2col, ...Im2colWide, cuTensorMapReplaceAddress):
// untrusted side. The client cannot make a map itself that a guarded kernel would accept: the
// worker validates the description, encodes the map with the driver and records its bytes
// (worker/handlers/tensor_map_handlers.cpp), and a guarded kernel's launch is refused unless each
// of its tensor-map parameters holds one of those maps. These functions only carry the
// arguments; runtime programs reach them through cudaGetDriverEntryPoint (cuGetProcAddress).
#include <cuda.h>

#include <cstring>

#include "client/cuda/driver_call.h"
#include "client/session/worker_calls.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos;
using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

constexpr cuuint32_t kMaxRank = 5;

// Sends the request and writes the worker's 128 bytes to *map (left alone on failure).
CUresult encodeOnWorker(const v1::CallRequest& request, CUtensorMap* map) {
  return inContext([&] {
    v1::CallReply reply;
    if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
    const std::string& bytes = reply.tensor_map_encoded().map();
    if (bytes.size() != sizeof(CUtensorMap)) return cudaErrorUnknown;
    std::memcpy(map, bytes.data(), sizeof(CUtensorMap));
    return cudaSuccess;
  });
}

// The fields every kind shares; false for a null array or a rank the arrays cannot be read at.
bool describeTensor(v1::TensorMapEncode* args, CUtensorMapDataType type, cuuint32_t rank, void* address,
                    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* elementStrides,
                    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                    CUtensorMapFloatOOBfill oob) {
  if (rank == 0 || rank > kMaxRank || dims == nullptr || elementStrides == nullptr ||
      (rank > 1 && strides == nullptr)) {
    return false;
  }
  args->set_data_type(type);
  args->set_rank(rank);
  args->set_global_address(reinterpret_cast<std::uint64_t>(address));
  for (cuuint32_t i = 0; i < rank; ++i) {
    args->add_global_dim(dims[i]);
    args->add_element_strides(elementStrides[i]);
    if (i + 1 < rank) args->add_global_strides(strides[i]);
  }
  args->set_interleave(interleave);
  args->set_swizzle(swizzle);
  args->set_l2_promotion(l2);
  args->set_oob_fill(oob);
  return true;
}

}  // namespace

extern "C" {

CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
                                const cuuint64_t* globalStrides, const cuuint32_t* boxDim,
                                const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill) {
  if (tensorMap == nullptr || boxDim == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::CallRequest request;
  v1::TensorMapEncode* args = request.mutable_tensor_map_encode();
  args->set_kind(v1::TensorMapEncode::TILED);
  if (!describeTensor(args, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                      elementStrides, interleave, swizzle, l2Promotion, oobFill)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (cuuint32_t i = 0; i < tensorRank; ++i) args->add_box_dim(boxDim[i]);
  return encodeOnWorker(request, tensorMap);
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                 cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
                                 const cuuint64_t* globalStrides, const int* pixelBoxLowerCorner,
                                 const int* pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                 cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides,
                                 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  if (tensorMap == nullptr || pixelBoxLowerCorner == nullptr || pixelBoxUpperCorner == nullptr ||
      tensorRank < 3)
    return CUDA_ERROR_INVALID_VALUE;
  v1::CallRequest request;
  v1::TensorMapEncode* args = request.mutable_tensor_map_encode();
  args->set_kind(v1::TensorMapEncode::IM2COL);
  if (!describeTensor(args, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                      elementStrides, interleave, swizzle, l2Promotion, oobFill)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (cuuint32_t i = 0; i + 2 < tensorRank; ++i) {
    args->add_pixel_box_lower_corner(pixelBoxLowerCorner[i]);
    args->add_pixel_box_upper_corner(pixelBoxUpperCorner[i]);
  }
  args->set_channels_per_pixel(channelsPerPixel);
  args->set_pixels_per_column(pixelsPerColumn);
  return encodeOnWorker(request, tensorMap);
}

CUresult cuTensorMapEncodeIm2colWide(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
                                     const cuuint64_t* globalStrides, int pixelBoxLowerCornerWidth,
                                     int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
                                     cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides,
                                     CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill) {
  if (tensorMap == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::CallRequest request;
  v1::TensorMapEncode* args = request.mutable_tensor_map_encode();
  args->set_kind(v1::TensorMapEncode::IM2COL_WIDE);
  if (!describeTensor(args, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                      elementStrides, interleave, swizzle, l2Promotion, oobFill)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  args->set_pixel_box_lower_corner_width(pixelBoxLowerCornerWidth);
  args->set_pixel_box_upper_corner_width(pixelBoxUpperCornerWidth);
  args->set_channels_per_pixel(channelsPerPixel);
  args->set_pixels_per_column(pixelsPerColumn);
  args->set_wide_mode(mode);
  return encodeOnWorker(request, tensorMap);
}

CUresult cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
  if (tensorMap == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::CallRequest request;
  v1::TensorMapEncode* args = request.mutable_tensor_map_encode();
  args->set_kind(v1::TensorMapEncode::REPLACE_ADDRESS);
  args->set_map(std::string(reinterpret_cast<const char*>(tensorMap), sizeof(CUtensorMap)));
  args->set_global_address(reinterpret_cast<std::uint64_t>(globalAddress));
  return encodeOnWorker(request, tensorMap);
}

}  // extern "C"
