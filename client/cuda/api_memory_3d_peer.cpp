// 3D copies of linear memory and copies between contexts (libcuda.so.1 exports), on the session's
// copy engine as cudaMemcpy3D and cudaMemcpyPeer are: each slice is a pitched rectangle of rows,
// every device byte checked by the worker. A copy naming an array is one request the worker bounds
// by the array (client/session/array_copies.h).
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "client/cuda/copy_targets.h"
#include "client/cuda/driver_call.h"
#include "client/session/copy_engine.h"
#include "client/session/enum_bits.h"
#include "client/session/thread_contexts.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

constexpr DefaultStream kLegacy = DefaultStream::kLegacy;
constexpr DefaultStream kPerThread = DefaultStream::kPerThread;
constexpr Ordering kSync = Ordering::kSynchronous;
constexpr Ordering kAsync = Ordering::kAsynchronous;

struct Side {
  std::uintptr_t address = 0;  // (x, y, z = 0)
  std::size_t pitch = 0;
  std::size_t sliceBytes = 0;  // pitch * height: from one slice to the next
  bool onDevice = false;
};

bool side3D(int type, const void* host, CUdeviceptr device, std::size_t x, std::size_t y, std::size_t z,
            std::size_t pitch, std::size_t height, Side* side, bool* unified) {
  if (!rectangleSide(type, host, device, x, y, pitch, &side->address, &side->onDevice, unified)) return false;
  side->pitch = pitch;
  std::uintptr_t skip = 0;
  return !__builtin_mul_overflow(pitch, height, &side->sliceBytes) &&
         !__builtin_mul_overflow(z, side->sliceBytes, &skip) &&
         !__builtin_add_overflow(side->address, skip, &side->address);
}

CUresult copy3D(const CUDA_MEMCPY3D* copy, CUstream stream, DefaultStream spelling, Ordering ordering) {
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (copy->srcLOD != 0 || copy->dstLOD != 0 || copy->reserved0 != nullptr || copy->reserved1 != nullptr)
    return CUDA_ERROR_INVALID_VALUE;  // levels of detail name mipmapped arrays; reserved must be 0
  if (memoryTypeOf(copy->srcMemoryType) == CU_MEMORYTYPE_ARRAY ||
      memoryTypeOf(copy->dstMemoryType) == CU_MEMORYTYPE_ARRAY) {
    // One request the worker bounds by the array (client/session/array_copies.h).
    ArrayCopy arrays;
    if (!arrayCopyEnd(memoryTypeOf(copy->srcMemoryType), copy->srcHost, copy->srcDevice, copy->srcArray,
                      copy->srcXInBytes, copy->srcY, copy->srcZ, copy->srcPitch, copy->srcHeight,
                      &arrays.src) ||
        !arrayCopyEnd(memoryTypeOf(copy->dstMemoryType), copy->dstHost, copy->dstDevice, copy->dstArray,
                      copy->dstXInBytes, copy->dstY, copy->dstZ, copy->dstPitch, copy->dstHeight,
                      &arrays.dst)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    arrays.widthBytes = copy->WidthInBytes;
    arrays.height = copy->Height;
    arrays.depth = copy->Depth;
    CopyTarget target;
    if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
      return result;
    return toDriverResult(copyWithArray(arrays, target));
  }
  Side src, dst;
  bool unified = false;
  if (!side3D(memoryTypeOf(copy->srcMemoryType), copy->srcHost, copy->srcDevice, copy->srcXInBytes,
              copy->srcY, copy->srcZ, copy->srcPitch, copy->srcHeight, &src, &unified) ||
      !side3D(memoryTypeOf(copy->dstMemoryType), copy->dstHost, copy->dstDevice, copy->dstXInBytes,
              copy->dstY, copy->dstZ, copy->dstPitch, copy->dstHeight, &dst, &unified)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t width = copy->WidthInBytes;
  // Each row must fit its pitch, and the rows of a slice its height (else slices would overlap).
  if (width > src.pitch || width > dst.pitch) return CUDA_ERROR_INVALID_VALUE;
  if (copy->Depth > 1 && (copy->Height > copy->srcHeight || copy->Height > copy->dstHeight))
    return CUDA_ERROR_INVALID_VALUE;
  const cudaMemcpyKind kind = rectangleCopyKind(src.onDevice, dst.onDevice, unified);
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
    return result;
  if (width == 0 || copy->Height == 0 || copy->Depth == 0) return CUDA_SUCCESS;
  auto* dstBase = reinterpret_cast<char*>(dst.address);
  const auto* srcBase = reinterpret_cast<const char*>(src.address);
  // Slices that follow each other without a gap form one rectangle of Height * Depth rows.
  std::size_t rows = 0;
  if (copy->srcHeight == copy->Height && copy->dstHeight == copy->Height &&
      !__builtin_mul_overflow(copy->Height, copy->Depth, &rows)) {
    return toDriverResult(copyRows(dstBase, dst.pitch, srcBase, src.pitch, width, rows, kind, target));
  }
  for (std::size_t z = 0; z < copy->Depth; ++z) {
    std::uintptr_t dstSlice = 0, srcSlice = 0;
    if (__builtin_mul_overflow(z, dst.sliceBytes, &dstSlice) ||
        __builtin_mul_overflow(z, src.sliceBytes, &srcSlice))
      return CUDA_ERROR_INVALID_VALUE;
    if (cudaError_t error = copyRows(dstBase + dstSlice, dst.pitch, srcBase + srcSlice, src.pitch, width,
                                     copy->Height, kind, target);
        error != cudaSuccess) {
      return toDriverResult(error);
    }
  }
  return CUDA_SUCCESS;
}

// A client's contexts are all on its one device: a copy between two of them is a device copy.
CUresult copyPeer(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext, size_t bytes,
                  CUstream stream, DefaultStream spelling, Ordering ordering) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  if (dstContext == nullptr || srcContext == nullptr || !isLiveContext(dstContext) ||
      !isLiveContext(srcContext))
    return CUDA_ERROR_INVALID_CONTEXT;
  CopyTarget target;
  if (CUresult result = copyTarget(stream, spelling, ordering, &target); result != CUDA_SUCCESS)
    return result;
  return toDriverResult(copyByKind(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)),
                                   reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src)), bytes,
                                   cudaMemcpyDeviceToDevice, target));
}

// A 3D copy between two contexts of the client: all are on its one device, so it is cuMemcpy3D's
// copy once each end's context is live (a context is ignored for an array end, as the driver says).
CUresult copy3DPeer(const CUDA_MEMCPY3D_PEER* peer, CUstream stream, DefaultStream spelling,
                    Ordering ordering) {
  if (peer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  // Memory types are read as bits (the program may put any there); copy3D checks them.
  const auto liveOrArray = [](const CUmemorytype& type, CUcontext context) {
    return enumBits(type) == CU_MEMORYTYPE_ARRAY || (context != nullptr && isLiveContext(context));
  };
  if (!liveOrArray(peer->srcMemoryType, peer->srcContext) ||
      !liveOrArray(peer->dstMemoryType, peer->dstContext))
    return CUDA_ERROR_INVALID_CONTEXT;
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = peer->srcXInBytes;
  copy.srcY = peer->srcY;
  copy.srcZ = peer->srcZ;
  copy.srcLOD = peer->srcLOD;
  std::memcpy(&copy.srcMemoryType, &peer->srcMemoryType, sizeof copy.srcMemoryType);
  copy.srcHost = peer->srcHost;
  copy.srcDevice = peer->srcDevice;
  copy.srcArray = peer->srcArray;
  copy.srcPitch = peer->srcPitch;
  copy.srcHeight = peer->srcHeight;
  copy.dstXInBytes = peer->dstXInBytes;
  copy.dstY = peer->dstY;
  copy.dstZ = peer->dstZ;
  copy.dstLOD = peer->dstLOD;
  std::memcpy(&copy.dstMemoryType, &peer->dstMemoryType, sizeof copy.dstMemoryType);
  copy.dstHost = peer->dstHost;
  copy.dstDevice = peer->dstDevice;
  copy.dstArray = peer->dstArray;
  copy.dstPitch = peer->dstPitch;
  copy.dstHeight = peer->dstHeight;
  copy.WidthInBytes = peer->WidthInBytes;
  copy.Height = peer->Height;
  copy.Depth = peer->Depth;
  return copy3D(&copy, stream, spelling, ordering);
}

}  // namespace

extern "C" {

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) { return copy3D(pCopy, nullptr, kLegacy, kSync); }
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy) {
  return copy3DPeer(pCopy, nullptr, kLegacy, kSync);
}
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy) {
  return copy3DPeer(pCopy, nullptr, kPerThread, kSync);
}
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  return copy3DPeer(pCopy, hStream, kLegacy, kAsync);
}
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  return copy3DPeer(pCopy, hStream, kPerThread, kAsync);
}
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) { return copy3D(pCopy, nullptr, kPerThread, kSync); }
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return copy3D(pCopy, hStream, kLegacy, kAsync);
}
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return copy3D(pCopy, hStream, kPerThread, kAsync);
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount) {
  return copyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, kLegacy, kSync);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount) {
  return copyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, kPerThread, kSync);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return copyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, kLegacy, kAsync);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return copyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, kPerThread, kAsync);
}

}  // extern "C"
