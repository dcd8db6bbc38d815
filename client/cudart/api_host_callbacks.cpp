// Host callbacks (cudart exports): cudaLaunchHostFunc and cudaStreamAddCallback.
//
// The worker's streams cannot call back into the client's code, so AgileOS runs a
// host callback conservatively: it synchronizes the stream through the worker and
// then calls the function on the calling thread before returning. The function thus
// runs after all work enqueued earlier on the stream and before any work enqueued
// later, which is the ordering CUDA guarantees. The difference from native CUDA:
// the calling thread blocks until the stream has drained, and the function runs on
// that thread rather than on a driver thread (CUDA forbids callbacks from calling
// CUDA, so a conforming callback cannot tell which thread it runs on).
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

// Waits for everything enqueued on the stream so far; returns the stream's status.
cudaError_t drainStream(std::uint64_t token) {
  agileos::v1::CallRequest request;
  request.mutable_stream_synchronize()->set_stream(token);
  agileos::v1::CallReply reply;
  const std::uint64_t mark = workMark();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) noteStreamIdle(token, mark);
  return error;
}

// True for the errors that mean the callback could not be enqueued at all (the
// stream handle is bad, or there is no worker), rather than an error of earlier work.
bool isEnqueueError(cudaError_t error) {
  return error == cudaErrorInvalidResourceHandle || error == cudaErrorNoDevice ||
         error == cudaErrorDevicesUnavailable || error == cudaErrorInvalidValue;
}

// cudaLaunchHostFunc: "the function will not be called in the event of an error in
// the CUDA context", so any failure of the earlier work is returned instead.
cudaError_t launchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData, DefaultStream spelling) {
  if (fn == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (cudaError_t error = drainStream(token); error != cudaSuccess) return recordError(error);
  fn(userData);
  return cudaSuccess;
}

// cudaStreamAddCallback: the callback receives the stream's status, so an error of
// the earlier work (a sticky fault found by the synchronization) is passed to it,
// and then returned, as every later call would return it.
cudaError_t addCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData, unsigned flags,
                        DefaultStream spelling) {
  if (callback == nullptr || flags != 0) return recordError(cudaErrorInvalidValue);
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  const cudaError_t status = drainStream(token);
  if (isEnqueueError(status)) return recordError(status);
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
