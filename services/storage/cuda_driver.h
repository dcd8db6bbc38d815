// The CUDA driver entry points of the cuda buffer backend, loaded from libcuda.so.1 at run
// time instead of linked: the service binary then starts (and its host backend runs) on
// machines without the driver, such as CI, and starts fast everywhere; the driver is loaded
// and initialised at the first ATTACH that needs it.
//
// Each entry is resolved by its base name with cuGetProcAddress for the CUDA_VERSION of the
// headers built against, so that it is the version <cuda.h> declares (cuMemcpyHtoDAsync_v2...).
//
// Thread-safety: loadCudaDriver may be called from any thread; the table is immutable.
#pragma once

#include <cuda.h>

#include <string>

namespace agileos::services::storage {

struct CudaDriver {
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuMemImportFromShareableHandle) memImportFromShareableHandle = nullptr;
  decltype(&::cuMemGetAllocationPropertiesFromHandle) memGetAllocationPropertiesFromHandle = nullptr;
  decltype(&::cuMemGetAllocationGranularity) memGetAllocationGranularity = nullptr;
  decltype(&::cuMemAddressReserve) memAddressReserve = nullptr;
  decltype(&::cuMemAddressFree) memAddressFree = nullptr;
  decltype(&::cuMemMap) memMap = nullptr;
  decltype(&::cuMemUnmap) memUnmap = nullptr;
  decltype(&::cuMemSetAccess) memSetAccess = nullptr;
  decltype(&::cuMemRelease) memRelease = nullptr;
  decltype(&::cuMemHostAlloc) memHostAlloc = nullptr;
  decltype(&::cuMemFreeHost) memFreeHost = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync = nullptr;

  // "cuX: CUDA_ERROR_Y" for the log.
  std::string describe(const char* call, CUresult result) const;
};

// Loads the driver the first time (dlopen of libcuda.so.1, never unloaded); later calls return
// the same table, or null with the same *reason when the driver or an entry point is missing.
const CudaDriver* loadCudaDriver(std::string* reason);

}  // namespace agileos::services::storage
