#include "client/cuda/driver_result.h"

#include <atomic>

#include "client/common/connection.h"
#include "client/session/worker_calls.h"

namespace agileos::client::cuda_shim {
namespace {

std::atomic<bool> gInitialized{false};

}  // namespace

CUresult toDriverResult(cudaError_t error) {
  switch (error) {
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidHostPointer:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorMissingConfiguration:
    case cudaErrorMemoryValueTooLarge:
      return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorInvalidSymbol:
      return CUDA_ERROR_NOT_FOUND;
    case cudaErrorInvalidDeviceFunction:
      return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorPriorLaunchFailure:
      return CUDA_ERROR_LAUNCH_FAILED;
    case cudaErrorInsufficientDriver:
    case cudaErrorStartupFailure:
      return CUDA_ERROR_NOT_INITIALIZED;
    default:
      break;
  }
  // Every other runtime code that CUresult also has keeps its number; the rest are unknown.
  return driverResultName(static_cast<CUresult>(error)) != nullptr ? static_cast<CUresult>(error)
                                                                   : CUDA_ERROR_UNKNOWN;
}

const char* driverResultName(CUresult result) {
  switch (result) {
#define AGILEOS_DRIVER_RESULT(name) \
  case name:                        \
    return #name;
#include "client/cuda/driver_result_codes.inc"
#undef AGILEOS_DRIVER_RESULT
    default:
      return nullptr;
  }
}

CUresult requireInitialized() {
  if (gInitialized.load(std::memory_order_acquire)) return CUDA_SUCCESS;
  return Connection::instance().established() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult initialize() {
  cudaError_t error = cudaSuccess;
  deviceInfo(&error);  // connects, once per process; the outcome is kept
  if (error != cudaSuccess) return toDriverResult(error);
  gInitialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

}  // namespace agileos::client::cuda_shim
