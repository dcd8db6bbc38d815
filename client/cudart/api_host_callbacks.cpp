// Host callbacks (cudart exports): cudaLaunchHostFunc and cudaStreamAddCallback, run as
// client/session/stream_event_calls.h says (after the stream drains, on the calling thread).
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/stream_event_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

// cudaLaunchHostFunc: "the function will not be called in the event of an error in
// the CUDA context", so any failure of the earlier work is returned instead.
cudaError_t launchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData, DefaultStream spelling) {
  return recordError(runHostFunction(stream, spelling, fn, userData));
}

// cudaStreamAddCallback: the callback receives the stream's status, so an error of
// the earlier work (a sticky fault found by the synchronization) is passed to it,
// and then returned, as every later call would return it.
cudaError_t addCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData, unsigned flags,
                        DefaultStream spelling) {
  if (callback == nullptr || flags != 0) return recordError(cudaErrorInvalidValue);
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  const cudaError_t status = synchronizeStream(stream, spelling);
  if (hostFunctionNotEnqueued(status)) return recordError(status);
  callback(stream, status, userData);
  return recordError(status);
}

}  // namespace

extern "C" {

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  return launchHostFunc(stream, fn, userData, DefaultStream::kLegacy);
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  return launchHostFunc(stream, fn, userData, DefaultStream::kPerThread);
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                  unsigned int flags) {
  return addCallback(stream, callback, userData, flags, DefaultStream::kLegacy);
}
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                       unsigned int flags) {
  return addCallback(stream, callback, userData, flags, DefaultStream::kPerThread);
}

}  // extern "C"
