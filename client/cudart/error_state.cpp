#include "client/cudart/error_state.h"

#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include "client/common/log.h"
#include "client/library_shim/unsupported.h"
#include "cudart_api.gen.h"

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

cudaError_t recordError(cudaError_t error) {
  if (error == cudaSuccess) return error;
  tLastError = error;
  if (isContextFatal(error)) {
    int expected = cudaSuccess;
    gStickyError.compare_exchange_strong(expected, error);
  }
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

cudaError_t reportUnsupported(const char* symbol) {
  // A row of cudart_api.tsv that fails closed logs its own reason (cudart_api.gen.h). A part of
  // an implemented call that is not offered ("cudaMemcpy3D with a cudaArray") has no row.
  if (library_shim::findUnsupported(cudart_api::failClosedEntries(), symbol) != nullptr) {
    return recordError(static_cast<cudaError_t>(cudart_api::reportUnsupported(symbol)));
  }
  static std::mutex mutex;
  static std::set<std::string> reported;
  {
    std::lock_guard lock(mutex);
    if (reported.insert(symbol).second) {
      AGILEOS_LOG_WARN(
          "%s is not supported by AgileOS (not offered to clients); returning cudaErrorNotSupported", symbol);
    }
  }
  return recordError(cudaErrorNotSupported);
}

}  // namespace agileos::client
