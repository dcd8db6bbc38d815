// 3D allocations, copies and fills of linear (pitched) memory (cudart exports).
//
// A cudaPitchedPtr describes slices of `ysize` rows, each row `pitch` bytes; a
// position (x, y, z) is byte x of row y of slice z. Each slice of a copy or fill is
// a pitched rectangle moved by copy_engine's row logic, so every byte still goes
// through the worker's range checks. A copy that names a CUDA array goes to
// agileosMemcpy3DWithArray (api_arrays.cpp), as one request the worker bounds by the array.
#include <cuda_runtime_api.h>

#include "client/cudart/memcpy3d_arrays.h"
#include "client/session/copy_engine.h"
#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

// Where (x, y, z) of a pitched allocation lies.
char* elementAddress(const cudaPitchedPtr& p, const cudaPos& pos) {
  return static_cast<char*>(p.ptr) + pos.z * p.pitch * p.ysize + pos.y * p.pitch + pos.x;
}

cudaError_t resolveTarget(cudaStream_t stream, DefaultStream spelling, bool async, CopyTarget* target) {
  target->async = async || spelling == DefaultStream::kPerThread;
  target->returnsEarly = async;
  return resolveStream(stream, spelling, &target->stream);
}

cudaError_t memcpy3DCommon(const cudaMemcpy3DParms* p, cudaStream_t stream, DefaultStream spelling,
                           bool async) {
  if (p == nullptr) return recordError(cudaErrorInvalidValue);
  const int kindValue = enumBits(p->kind);  // the program may have put any bits there
  if (kindValue < cudaMemcpyHostToHost || kindValue > cudaMemcpyDefault) {
    return recordError(cudaErrorInvalidMemcpyDirection);
  }
  const auto kind = static_cast<cudaMemcpyKind>(kindValue);
  if (p->srcArray != nullptr || p->dstArray != nullptr) {
    CopyTarget target;
    if (cudaError_t error = resolveTarget(stream, spelling, async, &target); error != cudaSuccess) {
      return recordError(error);
    }
    return recordError(agileosMemcpy3DWithArray(p, kind, target));
  }
  const cudaExtent& extent = p->extent;  // width in bytes: both ends are linear memory
  // Each row, from its x position on, must fit in its pitch (as a 2D copy's width must).
  if (p->srcPos.x > p->srcPtr.pitch || extent.width > p->srcPtr.pitch - p->srcPos.x ||
      p->dstPos.x > p->dstPtr.pitch || extent.width > p->dstPtr.pitch - p->dstPos.x) {
    return recordError(cudaErrorInvalidPitchValue);
  }
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return cudaSuccess;
  CopyTarget target;
  if (cudaError_t error = resolveTarget(stream, spelling, async, &target); error != cudaSuccess) {
    return recordError(error);
  }
  char* dst = elementAddress(p->dstPtr, p->dstPos);
  const char* src = elementAddress(p->srcPtr, p->srcPos);
  // Slices that follow each other without a gap form one rectangle of height * depth rows.
  if (p->dstPtr.ysize == extent.height && p->srcPtr.ysize == extent.height &&
      extent.depth <= UINT64_MAX / extent.height) {
    return recordError(copyRows(dst, p->dstPtr.pitch, src, p->srcPtr.pitch, extent.width,
                                extent.height * extent.depth, kind, target));
  }
  const std::uint64_t dstSlice = p->dstPtr.pitch * p->dstPtr.ysize;
  const std::uint64_t srcSlice = p->srcPtr.pitch * p->srcPtr.ysize;
  for (std::uint64_t z = 0; z < extent.depth; ++z) {
    cudaError_t error = copyRows(dst + z * dstSlice, p->dstPtr.pitch, src + z * srcSlice, p->srcPtr.pitch,
                                 extent.width, extent.height, kind, target);
    if (error != cudaSuccess) return recordError(error);
  }
  return cudaSuccess;
}

cudaError_t memset3DCommon(cudaPitchedPtr p, int value, cudaExtent extent, cudaStream_t stream,
                           DefaultStream spelling, bool async) {
  if (extent.width > p.pitch) return recordError(cudaErrorInvalidValue);  // as cudaMemset2D
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return cudaSuccess;
  CopyTarget target;
  if (cudaError_t error = resolveTarget(stream, spelling, async, &target); error != cudaSuccess) {
    return recordError(error);
  }
  const auto base = reinterpret_cast<std::uint64_t>(p.ptr);
  if (p.ysize == extent.height && extent.depth <= UINT64_MAX / extent.height) {
    return recordError(fillRows(base, p.pitch, value, extent.width, extent.height * extent.depth, target));
  }
  const std::uint64_t slice = p.pitch * p.ysize;
  for (std::uint64_t z = 0; z < extent.depth; ++z) {
    if (cudaError_t error = fillRows(base + z * slice, p.pitch, value, extent.width, extent.height, target);
        error != cudaSuccess) {
      return recordError(error);
    }
  }
  return cudaSuccess;
}

// A client has one device, ordinal 0 (api_peer.cpp): a peer copy names it at both ends and is a
// device-to-device 3D copy on it, checked as cudaMemcpy3D checks one.
cudaError_t memcpy3DPeerCommon(const cudaMemcpy3DPeerParms* p, cudaStream_t stream, DefaultStream spelling,
                               bool async) {
  if (p == nullptr) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = checkDeviceOrdinal(p->srcDevice); error != cudaSuccess) return recordError(error);
  if (cudaError_t error = checkDeviceOrdinal(p->dstDevice); error != cudaSuccess) return recordError(error);
  cudaMemcpy3DParms copy{};
  copy.srcArray = p->srcArray;
  copy.srcPos = p->srcPos;
  copy.srcPtr = p->srcPtr;
  copy.dstArray = p->dstArray;
  copy.dstPos = p->dstPos;
  copy.dstPtr = p->dstPtr;
  copy.extent = p->extent;
  copy.kind = cudaMemcpyDeviceToDevice;
  return memcpy3DCommon(&copy, stream, spelling, async);
}

}  // namespace

extern "C" {

// Pitched like cudaMallocPitch: depth slices of `height` rows each.
cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  if (pitchedDevPtr == nullptr) return recordError(cudaErrorInvalidValue);
  if (extent.depth != 0 && extent.height > SIZE_MAX / extent.depth)
    return recordError(cudaErrorMemoryAllocation);
  void* ptr = nullptr;
  size_t pitch = 0;
  if (cudaError_t error = cudaMallocPitch(&ptr, &pitch, extent.width, extent.height * extent.depth);
      error != cudaSuccess) {
    return error;  // recorded by cudaMallocPitch
  }
  *pitchedDevPtr = cudaPitchedPtr{ptr, pitch, extent.width, extent.height};
  return cudaSuccess;
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return memcpy3DCommon(p, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms* p) {
  return memcpy3DCommon(p, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  return memcpy3DCommon(p, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  return memcpy3DCommon(p, stream, DefaultStream::kPerThread, true);
}

cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms* p) {
  return memcpy3DPeerCommon(p, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms* p) {
  return memcpy3DPeerCommon(p, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return memcpy3DPeerCommon(p, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  return memcpy3DPeerCommon(p, stream, DefaultStream::kPerThread, true);
}

cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent) {
  return memset3DCommon(pitchedDevPtr, value, extent, nullptr, DefaultStream::kLegacy, false);
}
cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent) {
  return memset3DCommon(pitchedDevPtr, value, extent, nullptr, DefaultStream::kPerThread, false);
}
cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                              cudaStream_t stream) {
  return memset3DCommon(pitchedDevPtr, value, extent, stream, DefaultStream::kLegacy, true);
}
cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                                   cudaStream_t stream) {
  return memset3DCommon(pitchedDevPtr, value, extent, stream, DefaultStream::kPerThread, true);
}

}  // extern "C"
