// Profiler control (cudart exports).
//
// Native behaviour with no profiling tool attached: cudaProfilerStart and
// cudaProfilerStop return cudaSuccess and do nothing. The runtime API reference
// documents cudaSuccess as their only return apart from errors of earlier
// asynchronous work, and since CUDA 5.0 calling them without an initialized
// profiler is no longer an error (cudaErrorProfilerNotInitialized is deprecated
// for that reason). No tool can be attached to an AgileOS client: the client has
// no GPU and no CUDA driver, and a tool injected into it would see only this
// shim. So the native no-tool behaviour is the behaviour: they initialize the
// runtime as natively (reaching the worker) and report the sticky error, if any.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/worker_calls.h"

using namespace agileos::client;

namespace {

cudaError_t profilerControl() {
  cudaError_t error = cudaSuccess;
  deviceInfo(&error);
  if (error != cudaSuccess) return recordError(error);
  return stickyError();
}

}  // namespace

extern "C" {

cudaError_t cudaProfilerStart(void) { return profilerControl(); }
cudaError_t cudaProfilerStop(void) { return profilerControl(); }

}  // extern "C"
