#include "worker/cuda_errors.h"

namespace agileos::worker {

cudaError_t toCudaError(CUresult result) {
  // The runtime numbering was made to coincide with the driver's for every code a
  // forwarded call can produce (CUDA_ERROR_INVALID_VALUE == cudaErrorInvalidValue,
  // CUDA_ERROR_INVALID_HANDLE == cudaErrorInvalidResourceHandle == 400,
  // CUDA_ERROR_ILLEGAL_ADDRESS == cudaErrorIllegalAddress == 700, ...); the cast is
  // checked for the codes that matter by static_asserts below.
  return static_cast<cudaError_t>(result);
}

static_assert(static_cast<int>(CUDA_ERROR_INVALID_VALUE) == cudaErrorInvalidValue);
static_assert(static_cast<int>(CUDA_ERROR_OUT_OF_MEMORY) == cudaErrorMemoryAllocation);
static_assert(static_cast<int>(CUDA_ERROR_INVALID_HANDLE) == cudaErrorInvalidResourceHandle);
static_assert(static_cast<int>(CUDA_ERROR_NOT_FOUND) == cudaErrorSymbolNotFound);
static_assert(static_cast<int>(CUDA_ERROR_NOT_READY) == cudaErrorNotReady);
static_assert(static_cast<int>(CUDA_ERROR_INVALID_IMAGE) == cudaErrorInvalidKernelImage);
static_assert(static_cast<int>(CUDA_ERROR_NO_BINARY_FOR_GPU) == cudaErrorNoKernelImageForDevice);
static_assert(static_cast<int>(CUDA_ERROR_ILLEGAL_ADDRESS) == cudaErrorIllegalAddress);
static_assert(static_cast<int>(CUDA_ERROR_LAUNCH_FAILED) == cudaErrorLaunchFailure);
static_assert(static_cast<int>(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) == cudaErrorLaunchOutOfResources);
static_assert(static_cast<int>(CUDA_ERROR_INVALID_PTX) == cudaErrorInvalidPtx);
static_assert(static_cast<int>(CUDA_ERROR_NOT_SUPPORTED) == cudaErrorNotSupported);

cudaError_t toCudaError(memmgr::PointerCheck verdict) {
  return verdict == memmgr::PointerCheck::kOk ? cudaSuccess : cudaErrorInvalidValue;
}

bool isContextFatal(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

}  // namespace agileos::worker
