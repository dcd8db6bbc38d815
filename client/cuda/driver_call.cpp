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
  CUresult result = CUDA_SUCCESS;
  const v1::DeviceInfo* info = deviceDescription(&result);
  if (info == nullptr) return result;
  return device >= 0 && device < info->device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace agileos::client::cuda_shim
