// Streams and events (libcuda.so.1 exports): the session's stream and event calls
// (client/session/stream_event_calls.h), the same as the runtime shim's, so a CUstream is a
// cudaStream_t and a CUevent a cudaEvent_t of this process. CUstream's flags, CU_STREAM_LEGACY
// and CU_STREAM_PER_THREAD, and CUevent's flags are the runtime's numbers.
#include <cuda.h>

#include "client/cuda/driver_call.h"
#include "client/session/stream_event_calls.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

cudaStream_t runtimeStream(CUstream stream) { return reinterpret_cast<cudaStream_t>(stream); }
cudaEvent_t runtimeEvent(CUevent event) { return reinterpret_cast<cudaEvent_t>(event); }

CUresult createStreamChecked(CUstream* phStream, unsigned flags, int priority) {
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] { return createStream(flags, priority, reinterpret_cast<cudaStream_t*>(phStream)); });
}

CUresult streamFlags(CUstream hStream, unsigned* flags, DefaultStream spelling) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int priority = 0;
  return inContext(
      [&] { return streamCreationProperties(runtimeStream(hStream), spelling, flags, &priority); });
}

CUresult streamPriority(CUstream hStream, int* priority, DefaultStream spelling) {
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned flags = 0;
  return inContext(
      [&] { return streamCreationProperties(runtimeStream(hStream), spelling, &flags, priority); });
}

// Host functions and callbacks run after the stream drains, on the calling thread
// (client/session/stream_event_calls.h); a host function is not called after an error of the
// earlier work, a callback is, with that error.
CUresult launchHostFunc(CUstream hStream, CUhostFn fn, void* userData, DefaultStream spelling) {
  return inContext([&] { return runHostFunction(runtimeStream(hStream), spelling, fn, userData); });
}

CUresult addCallback(CUstream hStream, CUstreamCallback callback, void* userData, unsigned flags,
                     DefaultStream spelling) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  const cudaError_t status = synchronizeStream(runtimeStream(hStream), spelling);
  if (hostFunctionNotEnqueued(status)) return toDriverResult(status);
  callback(hStream, toDriverResult(status), userData);
  return toDriverResult(status);
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return createStreamChecked(phStream, Flags, 0);
}
CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return createStreamChecked(phStream, flags, priority);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  return inContext([&] { return destroyStream(runtimeStream(hStream)); });
}
CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }

CUresult cuStreamSynchronize(CUstream hStream) {
  return inContext([&] { return synchronizeStream(runtimeStream(hStream), DefaultStream::kLegacy); });
}
CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return inContext([&] { return synchronizeStream(runtimeStream(hStream), DefaultStream::kPerThread); });
}
CUresult cuStreamQuery(CUstream hStream) {
  return inContext([&] { return queryStream(runtimeStream(hStream), DefaultStream::kLegacy); });
}
CUresult cuStreamQuery_ptsz(CUstream hStream) {
  return inContext([&] { return queryStream(runtimeStream(hStream), DefaultStream::kPerThread); });
}
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return inContext([&] {
    return waitEventOnStream(runtimeStream(hStream), runtimeEvent(hEvent), Flags, DefaultStream::kLegacy);
  });
}
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return inContext([&] {
    return waitEventOnStream(runtimeStream(hStream), runtimeEvent(hEvent), Flags, DefaultStream::kPerThread);
  });
}
CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  return streamFlags(hStream, flags, DefaultStream::kLegacy);
}
CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  return streamFlags(hStream, flags, DefaultStream::kPerThread);
}
CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  return streamPriority(hStream, priority, DefaultStream::kLegacy);
}
CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  return streamPriority(hStream, priority, DefaultStream::kPerThread);
}

CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return inContext(
      [&] { return setStreamAttribute(runtimeStream(hStream), attr, value, DefaultStream::kLegacy); });
}
CUresult cuStreamSetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return inContext(
      [&] { return setStreamAttribute(runtimeStream(hStream), attr, value, DefaultStream::kPerThread); });
}
CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out) {
  return inContext(
      [&] { return getStreamAttribute(runtimeStream(hStream), attr, value_out, DefaultStream::kLegacy); });
}
CUresult cuStreamGetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out) {
  return inContext(
      [&] { return getStreamAttribute(runtimeStream(hStream), attr, value_out, DefaultStream::kPerThread); });
}
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) {
  return inContext(
      [&] { return copyStreamAttributes(runtimeStream(dst), runtimeStream(src), DefaultStream::kLegacy); });
}
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) {
  return inContext([&] {
    return copyStreamAttributes(runtimeStream(dst), runtimeStream(src), DefaultStream::kPerThread);
  });
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  return launchHostFunc(hStream, fn, userData, DefaultStream::kLegacy);
}
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  return launchHostFunc(hStream, fn, userData, DefaultStream::kPerThread);
}
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                             unsigned int flags) {
  return addCallback(hStream, callback, userData, flags, DefaultStream::kLegacy);
}
CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData,
                                  unsigned int flags) {
  return addCallback(hStream, callback, userData, flags, DefaultStream::kPerThread);
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] { return createEvent(Flags, reinterpret_cast<cudaEvent_t*>(phEvent)); });
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  return inContext([&] { return destroyEvent(runtimeEvent(hEvent)); });
}
CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return inContext([&] {
    return recordEvent(runtimeEvent(hEvent), runtimeStream(hStream), CU_EVENT_RECORD_DEFAULT,
                       DefaultStream::kLegacy);
  });
}
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return inContext([&] {
    return recordEvent(runtimeEvent(hEvent), runtimeStream(hStream), CU_EVENT_RECORD_DEFAULT,
                       DefaultStream::kPerThread);
  });
}
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return inContext([&] {
    return recordEvent(runtimeEvent(hEvent), runtimeStream(hStream), flags, DefaultStream::kLegacy);
  });
}
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return inContext([&] {
    return recordEvent(runtimeEvent(hEvent), runtimeStream(hStream), flags, DefaultStream::kPerThread);
  });
}

CUresult cuEventSynchronize(CUevent hEvent) {
  return inContext([&] { return synchronizeEvent(runtimeEvent(hEvent)); });
}
CUresult cuEventQuery(CUevent hEvent) {
  return inContext([&] { return queryEvent(runtimeEvent(hEvent)); });
}

CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return inContext([&] { return eventElapsedTime(runtimeEvent(hStart), runtimeEvent(hEnd), pMilliseconds); });
}
CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

}  // extern "C"
