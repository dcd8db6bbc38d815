#include "client/cuda/graph_node_params.h"

#include <cstdint>

#include "client/cuda/copy_targets.h"
#include "client/session/graph_node_params.h"
#include "client/session/thread_contexts.h"

namespace agileos::client::cuda_shim {
namespace {

template <typename Params>
void copyShape(const Params& params, cudaKernelNodeParams* out) {
  out->gridDim = dim3(params.gridDimX, params.gridDimY, params.gridDimZ);
  out->blockDim = dim3(params.blockDimX, params.blockDimY, params.blockDimZ);
  out->sharedMemBytes = params.sharedMemBytes;
  out->kernelParams = params.kernelParams;
  out->extra = params.extra;
}

template <typename Params>
void driverShape(const cudaKernelNodeParams& params, Params* out) {
  out->func = static_cast<CUfunction>(params.func);
  out->gridDimX = params.gridDim.x;
  out->gridDimY = params.gridDim.y;
  out->gridDimZ = params.gridDim.z;
  out->blockDimX = params.blockDim.x;
  out->blockDimY = params.blockDim.y;
  out->blockDimZ = params.blockDim.z;
  out->sharedMemBytes = params.sharedMemBytes;
  out->kernelParams = params.kernelParams;
  out->extra = params.extra;
}

// One side of a copy: the address of (x, y, z) and the side's kind of memory.
bool copySide(int type, const void* host, CUdeviceptr device, std::size_t x, std::size_t y, std::size_t z,
              std::size_t pitch, std::size_t height, std::uintptr_t* address, bool* onDevice, bool* unified) {
  if (!rectangleSide(type, host, device, x, y, pitch, address, onDevice, unified)) return false;
  std::size_t slice = 0, skip = 0;
  return !__builtin_mul_overflow(pitch, height, &slice) && !__builtin_mul_overflow(z, slice, &skip) &&
         !__builtin_add_overflow(*address, skip, address);
}

// The memory types a copy node's kind stands for (a node made from the runtime's structures keeps
// the kind the program gave; cudaMemcpyDefault reads as unified memory on both sides).
void memoryTypes(cudaMemcpyKind kind, CUmemorytype* src, CUmemorytype* dst) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      *src = *dst = CU_MEMORYTYPE_HOST;
      return;
    case cudaMemcpyHostToDevice:
      *src = CU_MEMORYTYPE_HOST;
      *dst = CU_MEMORYTYPE_DEVICE;
      return;
    case cudaMemcpyDeviceToHost:
      *src = CU_MEMORYTYPE_DEVICE;
      *dst = CU_MEMORYTYPE_HOST;
      return;
    case cudaMemcpyDeviceToDevice:
      *src = *dst = CU_MEMORYTYPE_DEVICE;
      return;
    default:
      *src = *dst = CU_MEMORYTYPE_UNIFIED;
      return;
  }
}

void setSide(CUmemorytype type, const void* address, std::size_t pitch, std::size_t rows,
             CUmemorytype* typeField, const void** hostField, CUdeviceptr* deviceField,
             std::size_t* pitchField, std::size_t* heightField) {
  *typeField = type;
  if (type == CU_MEMORYTYPE_HOST) {
    *hostField = address;
  } else {
    *deviceField = reinterpret_cast<CUdeviceptr>(address);
  }
  *pitchField = pitch;
  *heightField = rows;
}

}  // namespace

cudaError_t nodeContext(CUcontext context) {
  return context == nullptr || isLiveContext(context) ? cudaSuccess : cudaErrorDeviceUninitialized;
}

cudaError_t runtimeKernelParams(const CUDA_KERNEL_NODE_PARAMS_v1* params, cudaKernelNodeParams* out) {
  if (params == nullptr) return cudaErrorInvalidValue;
  *out = cudaKernelNodeParams{};
  out->func = params->func;
  copyShape(*params, out);
  return cudaSuccess;
}

cudaError_t runtimeKernelParams(const CUDA_KERNEL_NODE_PARAMS* params, cudaKernelNodeParams* out) {
  if (params == nullptr) return cudaErrorInvalidValue;
  if (cudaError_t error = nodeContext(params->ctx); error != cudaSuccess) return error;
  *out = cudaKernelNodeParams{};
  // A CUkernel is a CUfunction of the shim (api_library.cpp): the same handle.
  out->func = params->func != nullptr ? static_cast<void*>(params->func) : static_cast<void*>(params->kern);
  copyShape(*params, out);
  return cudaSuccess;
}

void driverKernelParams(const cudaKernelNodeParams& params, CUDA_KERNEL_NODE_PARAMS_v1* out) {
  *out = CUDA_KERNEL_NODE_PARAMS_v1{};
  driverShape(params, out);
}

void driverKernelParams(const cudaKernelNodeParams& params, CUDA_KERNEL_NODE_PARAMS* out) {
  *out = CUDA_KERNEL_NODE_PARAMS{};
  driverShape(params, out);
  // The handle is both the CUfunction and the CUkernel: a linked-in runtime that made the node with
  // `kern` looks its host stub up by `kern`.
  out->kern = static_cast<CUkernel>(params.func);
}

cudaError_t copyNodeWork(const CUDA_MEMCPY3D* copy, CUcontext context, CopyWork* work) {
  if (cudaError_t error = nodeContext(context); error != cudaSuccess) return error;
  if (copy == nullptr) return cudaErrorInvalidValue;
  if (copy->srcLOD != 0 || copy->dstLOD != 0 || copy->reserved0 != nullptr || copy->reserved1 != nullptr)
    return cudaErrorInvalidValue;  // levels of detail name mipmapped arrays; reserved must be 0
  const int srcType = memoryTypeOf(copy->srcMemoryType);
  const int dstType = memoryTypeOf(copy->dstMemoryType);
  if (srcType == CU_MEMORYTYPE_ARRAY || dstType == CU_MEMORYTYPE_ARRAY) return cudaErrorNotSupported;
  std::uintptr_t src = 0, dst = 0;
  bool srcOnDevice = false, dstOnDevice = false, unified = false;
  if (!copySide(srcType, copy->srcHost, copy->srcDevice, copy->srcXInBytes, copy->srcY, copy->srcZ,
                copy->srcPitch, copy->srcHeight, &src, &srcOnDevice, &unified) ||
      !copySide(dstType, copy->dstHost, copy->dstDevice, copy->dstXInBytes, copy->dstY, copy->dstZ,
                copy->dstPitch, copy->dstHeight, &dst, &dstOnDevice, &unified)) {
    return cudaErrorInvalidValue;
  }
  const std::size_t width = copy->WidthInBytes;
  if (width == 0 || copy->Height == 0 || copy->Depth == 0) return cudaErrorInvalidValue;
  std::size_t rows = 0;
  if (__builtin_mul_overflow(copy->Height, copy->Depth, &rows)) return cudaErrorInvalidValue;
  // A single row reads no pitch; otherwise each row must fit its pitch, and the rows of a slice its
  // height (else slices would overlap).
  const std::size_t srcPitch = rows == 1 ? width : copy->srcPitch;
  const std::size_t dstPitch = rows == 1 ? width : copy->dstPitch;
  if (width > srcPitch || width > dstPitch) return cudaErrorInvalidPitchValue;
  if (copy->Depth > 1 && (copy->Height > copy->srcHeight || copy->Height > copy->dstHeight))
    return cudaErrorInvalidValue;
  // A node holds one rectangle: slices must follow each other without a gap.
  if (copy->Depth > 1 && (copy->srcHeight != copy->Height || copy->dstHeight != copy->Height))
    return cudaErrorNotSupported;
  *work = CopyWork{reinterpret_cast<void*>(dst),
                   dstPitch,
                   reinterpret_cast<const void*>(src),
                   srcPitch,
                   width,
                   rows,
                   rectangleCopyKind(srcOnDevice, dstOnDevice, unified)};
  return cudaSuccess;
}

CUDA_MEMCPY3D driverCopyParams(const CopyWork& work) {
  CUDA_MEMCPY3D copy{};
  CUmemorytype srcType{}, dstType{};
  memoryTypes(work.kind, &srcType, &dstType);
  setSide(srcType, work.src, work.srcPitch, work.height, &copy.srcMemoryType, &copy.srcHost, &copy.srcDevice,
          &copy.srcPitch, &copy.srcHeight);
  const void* dstHost = nullptr;
  setSide(dstType, work.dst, work.dstPitch, work.height, &copy.dstMemoryType, &dstHost, &copy.dstDevice,
          &copy.dstPitch, &copy.dstHeight);
  copy.dstHost = const_cast<void*>(dstHost);
  copy.WidthInBytes = work.width;
  copy.Height = work.height;
  copy.Depth = 1;
  return copy;
}

cudaError_t fillNodeWork(const CUDA_MEMSET_NODE_PARAMS* params, CUcontext context, FillWork* work) {
  if (cudaError_t error = nodeContext(context); error != cudaSuccess) return error;
  if (params == nullptr) return cudaErrorInvalidValue;
  cudaMemsetParams runtime{};
  runtime.dst = reinterpret_cast<void*>(params->dst);
  runtime.pitch = params->pitch;
  runtime.value = params->value;
  runtime.elementSize = params->elementSize;
  runtime.width = params->width;
  runtime.height = params->height;
  return graph_api::fillWork(&runtime, work);
}

CUDA_MEMSET_NODE_PARAMS driverMemsetParams(const FillWork& work) {
  const cudaMemsetParams params = graph_api::fillParams(work);
  CUDA_MEMSET_NODE_PARAMS out{};
  out.dst = reinterpret_cast<CUdeviceptr>(params.dst);
  out.pitch = params.pitch;
  out.value = params.value;
  out.elementSize = params.elementSize;
  out.width = params.width;
  out.height = params.height;
  return out;
}

cudaError_t hostNodeWork(const CUDA_HOST_NODE_PARAMS* params, HostWork* work) {
  if (params == nullptr) return cudaErrorInvalidValue;
  const cudaHostNodeParams runtime{params->fn, params->userData};
  return graph_api::hostWork(&runtime, work);
}

CUDA_HOST_NODE_PARAMS driverHostParams(const HostWork& work) {
  CUDA_HOST_NODE_PARAMS out{};
  out.fn = work.function;
  out.userData = work.userData;
  return out;
}

}  // namespace agileos::client::cuda_shim
