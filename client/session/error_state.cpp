#include "client/session/error_state.h"

#include <atomic>

namespace agileos::client {
namespace {

thread_local cudaError_t tLastError = cudaSuccess;
std::atomic<int> gStickyError{cudaSuccess};

}  // namespace

bool isContextFatal(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

void latchIfContextFatal(cudaError_t error) {
  if (isContextFatal(error)) {
    int expected = cudaSuccess;
    gStickyError.compare_exchange_strong(expected, error);
  }
}

cudaError_t recordError(cudaError_t error) {
  if (error == cudaSuccess) return error;
  tLastError = error;
  latchIfContextFatal(error);
  return error;
}

// The thread's last error only, sticky or not: measured on CUDA 13, cudaGetLastError
// returns cudaErrorIllegalAddress once after a fault and cudaSuccess the next time,
// while every call that needs the device keeps returning the sticky error.
cudaError_t takeLastError() {
  const cudaError_t last = tLastError;
  tLastError = cudaSuccess;
  return last;
}

cudaError_t peekLastError() { return tLastError; }

cudaError_t stickyError() { return static_cast<cudaError_t>(gStickyError.load()); }

}  // namespace agileos::client
