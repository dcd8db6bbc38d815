// CudaGpuBackend: arrays, texture and surface objects (see gpu_backend.h).
#include "worker/backend/cuda_gpu_backend.h"

namespace agileos::worker {

#define AGILEOS_BIND()                                                \
  do {                                                                \
    if (CUresult bound = bind(); bound != CUDA_SUCCESS) return bound; \
  } while (0)

CUresult CudaGpuBackend::arrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, CUarray* array) {
  AGILEOS_BIND();
  return cuArray3DCreate(array, &descriptor);
}

CUresult CudaGpuBackend::arrayDestroy(CUarray array) {
  AGILEOS_BIND();
  return cuArrayDestroy(array);
}

CUresult CudaGpuBackend::mipmappedArrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels,
                                              CUmipmappedArray* array) {
  AGILEOS_BIND();
  return cuMipmappedArrayCreate(array, &descriptor, levels);
}

CUresult CudaGpuBackend::mipmappedArrayLevel(CUmipmappedArray array, unsigned level, CUarray* levelArray) {
  AGILEOS_BIND();
  return cuMipmappedArrayGetLevel(levelArray, array, level);
}

CUresult CudaGpuBackend::mipmappedArrayDestroy(CUmipmappedArray array) {
  AGILEOS_BIND();
  return cuMipmappedArrayDestroy(array);
}

CUresult CudaGpuBackend::copy3D(const CUDA_MEMCPY3D& copy, CUstream stream, bool async) {
  AGILEOS_BIND();
  if (!async) return cuMemcpy3D(&copy);
  const CUresult result = cuMemcpy3DAsync(&copy, stream);
  // Host memory is the request's or the reply's buffer, gone once this returns: wait for it.
  const bool host = copy.srcMemoryType == CU_MEMORYTYPE_HOST || copy.dstMemoryType == CU_MEMORYTYPE_HOST;
  if (result != CUDA_SUCCESS || !host) return result;
  return cuStreamSynchronize(stream);
}

CUresult CudaGpuBackend::texObjectCreate(const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC& texture,
                                         CUtexObject* object) {
  AGILEOS_BIND();
  return cuTexObjectCreate(object, &resource, &texture, nullptr);
}

CUresult CudaGpuBackend::texObjectDestroy(CUtexObject object) {
  AGILEOS_BIND();
  return cuTexObjectDestroy(object);
}

CUresult CudaGpuBackend::surfObjectCreate(const CUDA_RESOURCE_DESC& resource, CUsurfObject* object) {
  AGILEOS_BIND();
  return cuSurfObjectCreate(object, &resource);
}

CUresult CudaGpuBackend::surfObjectDestroy(CUsurfObject object) {
  AGILEOS_BIND();
  return cuSurfObjectDestroy(object);
}

CUresult CudaGpuBackend::tensorMapEncode(const TensorMapDescription& d, CUtensorMap* map) {
  AGILEOS_BIND();
  const auto type = static_cast<CUtensorMapDataType>(d.dataType);
  const auto interleave = static_cast<CUtensorMapInterleave>(d.interleave);
  const auto swizzle = static_cast<CUtensorMapSwizzle>(d.swizzle);
  const auto l2 = static_cast<CUtensorMapL2promotion>(d.l2Promotion);
  const auto oob = static_cast<CUtensorMapFloatOOBfill>(d.oobFill);
  void* address = reinterpret_cast<void*>(d.globalAddress);
  switch (d.kind) {
    case TensorMapDescription::Kind::kTiled:
      return cuTensorMapEncodeTiled(map, type, d.rank, address, d.globalDim.data(), d.globalStrides.data(),
                                    d.boxDim.data(), d.elementStrides.data(), interleave, swizzle, l2, oob);
    case TensorMapDescription::Kind::kIm2col:
      return cuTensorMapEncodeIm2col(map, type, d.rank, address, d.globalDim.data(), d.globalStrides.data(),
                                     d.pixelBoxLowerCorner.data(), d.pixelBoxUpperCorner.data(),
                                     d.channelsPerPixel, d.pixelsPerColumn, d.elementStrides.data(),
                                     interleave, swizzle, l2, oob);
    case TensorMapDescription::Kind::kIm2colWide:
      return cuTensorMapEncodeIm2colWide(
          map, type, d.rank, address, d.globalDim.data(), d.globalStrides.data(), d.pixelBoxLowerCornerWidth,
          d.pixelBoxUpperCornerWidth, d.channelsPerPixel, d.pixelsPerColumn, d.elementStrides.data(),
          interleave, static_cast<CUtensorMapIm2ColWideMode>(d.wideMode), swizzle, l2, oob);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace agileos::worker
