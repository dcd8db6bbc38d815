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

}  // namespace agileos::worker
