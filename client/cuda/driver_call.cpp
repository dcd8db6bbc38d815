#include "client/cuda/driver_call.h"

#include "client/session/worker_calls.h"

namespace agileos::client::cuda_shim {

const v1::DeviceInfo* deviceDescription(CUresult* result) {
  cudaError_t error = cudaSuccess;
  const v1::DeviceInfo* info = deviceInfo(&error);
  *result = toDriverResult(error);
  return info;
}

CUresult requireDevice(CUdevice device) {
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  return toDriverResult(checkDeviceOrdinal(device));
}

}  // namespace agileos::client::cuda_shim
