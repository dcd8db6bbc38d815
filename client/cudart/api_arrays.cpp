// CUDA arrays (cudart exports): allocation, queries and copies. The worker makes each array and
// returns its token, which the program holds as its cudaArray_t; the client keeps the array's
// descriptor for the queries (array_registry.h). Every copy goes through copyWithArray, whose
// requests the worker bounds by the array's extent and the client's allocations.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "client/cudart/memcpy3d_arrays.h"
#include "client/session/array_calls.h"
#include "client/session/array_copies.h"
#include "client/session/array_registry.h"
#include "client/session/copy_engine.h"
#include "client/session/error_state.h"
#include "client/session/streams.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
namespace v1 = agileos::v1;

namespace {

constexpr unsigned kArrayFlags =
    cudaArrayLayered | cudaArraySurfaceLoadStore | cudaArrayCubemap | cudaArrayTextureGather;

cudaError_t createArray(std::uint64_t* token, const cudaChannelFormatDesc* desc, cudaExtent extent,
                        unsigned flags, unsigned levels) {
  bindPrimaryContextIfNoneCurrent();
  if (token == nullptr || desc == nullptr || (flags & ~kArrayFlags) != 0) return cudaErrorInvalidValue;
  CUarray_format format{};
  unsigned channels = 0;
  std::uint32_t element = 0;
  if (!arrayFormatOf(*desc, &format, &channels, &element)) return cudaErrorInvalidChannelDescriptor;
  return createArrayOnWorker({*desc, extent, flags, levels, element}, format, channels, token);
}

cudaError_t destroyArray(const void* array) { return destroyArrayOnWorker(arrayToken(array)); }

cudaError_t targetFor(cudaStream_t stream, DefaultStream spelling, bool async, CopyTarget* target) {
  target->async = async || spelling == DefaultStream::kPerThread;
  target->returnsEarly = async;
  return resolveStream(stream, spelling, &target->stream);
}

// Whether linear memory at `p` is the device's, as `kind` says (or as its address says).
cudaError_t linearSide(const void* p, cudaMemcpyKind kind, bool source, bool* device) {
  switch (kind) {
    case cudaMemcpyHostToDevice:
      *device = !source;
      return cudaSuccess;
    case cudaMemcpyDeviceToHost:
      *device = source;
      return cudaSuccess;
    case cudaMemcpyDeviceToDevice:
      *device = true;
      return cudaSuccess;
    case cudaMemcpyDefault:
      *device = isDeviceAddress(p);
      return cudaSuccess;
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

// A 2D copy between linear memory (`linear`, `pitch` bytes a row, on the side `kind` says) and
// an array at (wOffset bytes, hOffset rows): into the array when `toArray`, out of it otherwise.
cudaError_t linearArrayCopy(bool toArray, void* linear, size_t pitch, const void* array, size_t wOffset,
                            size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                            cudaStream_t stream, DefaultStream spelling, bool async) {
  if (linear == nullptr || array == nullptr) return recordError(cudaErrorInvalidValue);
  if (width > pitch) return recordError(cudaErrorInvalidPitchValue);
  ArrayCopy copy;
  ArrayCopyEnd& linearEnd = toArray ? copy.src : copy.dst;
  ArrayCopyEnd& arrayEnd = toArray ? copy.dst : copy.src;
  if (cudaError_t error = linearSide(linear, kind, toArray, &linearEnd.device); error != cudaSuccess)
    return recordError(error);
  linearEnd.pointer = linear;
  linearEnd.pitch = pitch;
  linearEnd.rows = height;
  arrayEnd.array = arrayToken(array);
  arrayEnd.x = wOffset;
  arrayEnd.y = hOffset;
  copy.widthBytes = width;
  copy.height = height;
  CopyTarget target;
  if (cudaError_t error = targetFor(stream, spelling, async, &target); error != cudaSuccess)
    return recordError(error);
  return recordError(copyWithArray(copy, target));
}

cudaError_t memcpy2DToArrayCommon(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                  size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                                  cudaStream_t stream, DefaultStream spelling, bool async) {
  return linearArrayCopy(true, const_cast<void*>(src), spitch, dst, wOffset, hOffset, width, height, kind,
                         stream, spelling, async);
}

cudaError_t memcpy2DFromArrayCommon(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                    size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                                    cudaStream_t stream, DefaultStream spelling, bool async) {
  return linearArrayCopy(false, dst, dpitch, src, wOffset, hOffset, width, height, kind, stream, spelling,
                         async);
}

cudaError_t memcpy2DArrayToArrayCommon(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                       cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                       size_t width, size_t height, cudaMemcpyKind kind,
                                       DefaultStream spelling) {
  if (dst == nullptr || src == nullptr) return recordError(cudaErrorInvalidValue);
  if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return recordError(cudaErrorInvalidMemcpyDirection);
  }
  ArrayCopy copy;
  copy.src.array = arrayToken(src);
  copy.src.x = wOffsetSrc;
  copy.src.y = hOffsetSrc;
  copy.dst.array = arrayToken(dst);
  copy.dst.x = wOffsetDst;
  copy.dst.y = hOffsetDst;
  copy.widthBytes = width;
  copy.height = height;
  CopyTarget target;
  if (cudaError_t error = targetFor(nullptr, spelling, false, &target); error != cudaSuccess)
    return recordError(error);
  return recordError(copyWithArray(copy, target));
}

// cudaMemcpyToArray / FromArray (deprecated): `count` bytes from (wOffset, hOffset) on, row after
// row of the array: a partial first row, whole rows, a partial last row.
cudaError_t memcpyLinearArray(cudaArray_const_t array, size_t wOffset, size_t hOffset, void* linear,
                              size_t count, cudaMemcpyKind kind, bool toArray, cudaStream_t stream,
                              DefaultStream spelling, bool async) {
  if (array == nullptr || linear == nullptr) return recordError(cudaErrorInvalidValue);
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(array));
  if (!info) return recordError(cudaErrorInvalidResourceHandle);
  const std::uint64_t rowBytes = info->extent.width * info->elementBytes;
  if (rowBytes == 0 || wOffset > rowBytes) return recordError(cudaErrorInvalidValue);
  char* bytes = static_cast<char*>(linear);
  std::uint64_t x = wOffset, y = hOffset;
  while (count > 0) {
    std::uint64_t width = std::min<std::uint64_t>(count, rowBytes - x);
    std::uint64_t rows = 1;
    if (x == 0 && count >= rowBytes) {
      width = rowBytes;
      rows = count / rowBytes;
    }
    cudaError_t error = toArray ? memcpy2DToArrayCommon(const_cast<cudaArray_t>(array), x, y, bytes, width,
                                                        width, rows, kind, stream, spelling, async)
                                : memcpy2DFromArrayCommon(bytes, width, array, x, y, width, rows, kind,
                                                          stream, spelling, async);
    if (error != cudaSuccess) return error;
    bytes += width * rows;
    count -= width * rows;
    x = (x + width) % rowBytes;
    y += x == 0 ? rows : 0;
  }
  return cudaSuccess;
}

}  // namespace

// cudaMemcpy3D's part with an array (api_memory_3d.cpp): positions and extent in elements of the
// array, x of a linear end in bytes.
cudaError_t agileosMemcpy3DWithArray(const cudaMemcpy3DParms* p, cudaMemcpyKind kind, CopyTarget target) {
  const cudaArray_t arrayOf = p->srcArray != nullptr ? p->srcArray : p->dstArray;
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(arrayOf));
  if (!info) return cudaErrorInvalidResourceHandle;
  const std::uint64_t element = info->elementBytes;
  ArrayCopy copy;
  copy.widthBytes = p->extent.width * element;
  copy.height = p->extent.height;
  copy.depth = p->extent.depth;
  auto end = [&](cudaArray_t array, const cudaPitchedPtr& linear, const cudaPos& pos, bool source,
                 ArrayCopyEnd* out) -> cudaError_t {
    if (array != nullptr) {
      const std::optional<ArrayInfo> mine = ArrayRegistry::instance().array(arrayToken(array));
      if (!mine) return cudaErrorInvalidResourceHandle;
      out->array = arrayToken(array);
      out->x = pos.x * mine->elementBytes;
    } else {
      if (cudaError_t error = linearSide(linear.ptr, kind, source, &out->device); error != cudaSuccess)
        return error;
      out->pointer = linear.ptr;
      out->pitch = linear.pitch;
      out->rows = linear.ysize;
      out->x = pos.x;
    }
    out->y = pos.y;
    out->z = pos.z;
    return cudaSuccess;
  };
  if (cudaError_t error = end(p->srcArray, p->srcPtr, p->srcPos, true, &copy.src); error != cudaSuccess)
    return error;
  if (cudaError_t error = end(p->dstArray, p->dstPtr, p->dstPos, false, &copy.dst); error != cudaSuccess)
    return error;
  return copyWithArray(copy, target);
}

extern "C" {

cudaError_t cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc, size_t width,
                            size_t height, unsigned int flags) {
  if (array == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t token = 0;
  if (cudaError_t error = createArray(&token, desc, cudaExtent{width, height, 0}, flags, 0);
      error != cudaSuccess)
    return recordError(error);
  *array = reinterpret_cast<cudaArray_t>(token);
  return cudaSuccess;
}

cudaError_t cudaMalloc3DArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                              struct cudaExtent extent, unsigned int flags) {
  if (array == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t token = 0;
  if (cudaError_t error = createArray(&token, desc, extent, flags, 0); error != cudaSuccess)
    return recordError(error);
  *array = reinterpret_cast<cudaArray_t>(token);
  return cudaSuccess;
}

cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmappedArray,
                                     const struct cudaChannelFormatDesc* desc, struct cudaExtent extent,
                                     unsigned int numLevels, unsigned int flags) {
  if (mipmappedArray == nullptr || numLevels == 0) return recordError(cudaErrorInvalidValue);
  std::uint64_t token = 0;
  if (cudaError_t error = createArray(&token, desc, extent, flags, numLevels); error != cudaSuccess)
    return recordError(error);
  *mipmappedArray = reinterpret_cast<cudaMipmappedArray_t>(token);
  return cudaSuccess;
}

cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t* levelArray, cudaMipmappedArray_const_t mipmappedArray,
                                       unsigned int level) {
  if (levelArray == nullptr || mipmappedArray == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t token = 0;
  if (cudaError_t error = mipmapLevelOnWorker(arrayToken(mipmappedArray), level, &token);
      error != cudaSuccess)
    return recordError(error);
  *levelArray = reinterpret_cast<cudaArray_t>(token);
  return cudaSuccess;
}

cudaError_t cudaFreeArray(cudaArray_t array) { return recordError(destroyArray(array)); }
cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
  return recordError(destroyArray(mipmappedArray));
}

cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc* desc, struct cudaExtent* extent,
                             unsigned int* flags, cudaArray_t array) {
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(array));
  if (!info || info->levels != 0) return recordError(cudaErrorInvalidResourceHandle);
  if (desc != nullptr) *desc = info->desc;
  if (extent != nullptr) *extent = info->extent;
  if (flags != nullptr) *flags = info->flags;
  return cudaSuccess;
}

cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  if (desc == nullptr) return recordError(cudaErrorInvalidValue);
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(arrayToken(array));
  if (!info) return recordError(cudaErrorInvalidResourceHandle);
  *desc = info->desc;
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DToArrayCommon(dst, wOffset, hOffset, src, spitch, width, height, kind, nullptr,
                               DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                     size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DToArrayCommon(dst, wOffset, hOffset, src, spitch, width, height, kind, nullptr,
                               DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                     size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                                     cudaStream_t stream) {
  return memcpy2DToArrayCommon(dst, wOffset, hOffset, src, spitch, width, height, kind, stream,
                               DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy2DToArrayCommon(dst, wOffset, hOffset, src, spitch, width, height, kind, stream,
                               DefaultStream::kPerThread, true);
}

cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                  size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DFromArrayCommon(dst, dpitch, src, wOffset, hOffset, width, height, kind, nullptr,
                                 DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpy2DFromArray_ptds(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height,
                                       enum cudaMemcpyKind kind) {
  return memcpy2DFromArrayCommon(dst, dpitch, src, wOffset, hOffset, width, height, kind, nullptr,
                                 DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind,
                                       cudaStream_t stream) {
  return memcpy2DFromArrayCommon(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream,
                                 DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                            size_t hOffset, size_t width, size_t height,
                                            enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy2DFromArrayCommon(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream,
                                 DefaultStream::kPerThread, true);
}

cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                     cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                     size_t width, size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DArrayToArrayCommon(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height,
                                    kind, DefaultStream::kLegacy);
}
cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                          cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                          size_t width, size_t height, enum cudaMemcpyKind kind) {
  return memcpy2DArrayToArrayCommon(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height,
                                    kind, DefaultStream::kPerThread);
}

cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                              enum cudaMemcpyKind kind) {
  return memcpyLinearArray(dst, wOffset, hOffset, const_cast<void*>(src), count, kind, true, nullptr,
                           DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                   size_t count, enum cudaMemcpyKind kind) {
  return memcpyLinearArray(dst, wOffset, hOffset, const_cast<void*>(src), count, kind, true, nullptr,
                           DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                   size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyLinearArray(dst, wOffset, hOffset, const_cast<void*>(src), count, kind, true, stream,
                           DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                        size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyLinearArray(dst, wOffset, hOffset, const_cast<void*>(src), count, kind, true, stream,
                           DefaultStream::kPerThread, true);
}
cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                size_t count, enum cudaMemcpyKind kind) {
  return memcpyLinearArray(src, wOffset, hOffset, dst, count, kind, false, nullptr, DefaultStream::kLegacy,
                           false);
}
cudaError_t cudaMemcpyFromArray_ptds(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                     size_t count, enum cudaMemcpyKind kind) {
  return memcpyLinearArray(src, wOffset, hOffset, dst, count, kind, false, nullptr, DefaultStream::kPerThread,
                           false);
}
cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                     size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyLinearArray(src, wOffset, hOffset, dst, count, kind, false, stream, DefaultStream::kLegacy,
                           true);
}
cudaError_t cudaMemcpyFromArrayAsync_ptsz(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                          size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpyLinearArray(src, wOffset, hOffset, dst, count, kind, false, stream, DefaultStream::kPerThread,
                           true);
}

}  // extern "C"
