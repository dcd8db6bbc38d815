// Streams and events (cudart exports): the session's stream and event calls
// (client/session/stream_event_calls.h), with the runtime's error recording.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/stream_event_calls.h"
#include "client/session/thread_contexts.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

// "Not ready" is a status, not an error: it is not recorded as the thread's last error.
cudaError_t recordUnlessNotReady(cudaError_t error) {
  return error == cudaErrorNotReady ? error : recordError(error);
}

cudaError_t createStreamChecked(cudaStream_t* pStream, unsigned flags, int priority) {
  bindPrimaryContextIfNoneCurrent();
  if (pStream == nullptr) return recordError(cudaErrorInvalidValue);
  return recordError(createStream(flags, priority, pStream));
}

cudaError_t streamFlags(cudaStream_t stream, unsigned* flags, DefaultStream spelling) {
  if (flags == nullptr) return recordError(cudaErrorInvalidValue);
  int priority = 0;
  return recordError(streamCreationProperties(stream, spelling, flags, &priority));
}

cudaError_t streamPriority(cudaStream_t stream, int* priority, DefaultStream spelling) {
  if (priority == nullptr) return recordError(cudaErrorInvalidValue);
  unsigned flags = 0;
  return recordError(streamCreationProperties(stream, spelling, &flags, priority));
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return createStreamChecked(pStream, cudaStreamDefault, 0);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return createStreamChecked(pStream, flags, 0);
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  return createStreamChecked(pStream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) { return recordError(destroyStream(stream)); }

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(synchronizeStream(stream, DefaultStream::kLegacy));
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  bindPrimaryContextIfNoneCurrent();
  return recordError(synchronizeStream(stream, DefaultStream::kPerThread));
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return recordUnlessNotReady(queryStream(stream, DefaultStream::kLegacy));
}
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  return recordUnlessNotReady(queryStream(stream, DefaultStream::kPerThread));
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return recordError(waitEventOnStream(stream, event, flags, DefaultStream::kLegacy));
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return recordError(waitEventOnStream(stream, event, flags, DefaultStream::kPerThread));
}
cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  return streamFlags(hStream, flags, DefaultStream::kLegacy);
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int* flags) {
  return streamFlags(hStream, flags, DefaultStream::kPerThread);
}
cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  return streamPriority(hStream, priority, DefaultStream::kLegacy);
}
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int* priority) {
  return streamPriority(hStream, priority, DefaultStream::kPerThread);
}

cudaError_t cudaStreamSetAttribute(cudaStream_t hStream, cudaStreamAttrID attr,
                                   const cudaStreamAttrValue* value) {
  return recordError(setStreamAttribute(hStream, attr, value, DefaultStream::kLegacy));
}
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t hStream, cudaStreamAttrID attr,
                                        const cudaStreamAttrValue* value) {
  return recordError(setStreamAttribute(hStream, attr, value, DefaultStream::kPerThread));
}
cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr,
                                   cudaStreamAttrValue* value_out) {
  return recordError(getStreamAttribute(hStream, attr, value_out, DefaultStream::kLegacy));
}
cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t hStream, cudaStreamAttrID attr,
                                        cudaStreamAttrValue* value_out) {
  return recordError(getStreamAttribute(hStream, attr, value_out, DefaultStream::kPerThread));
}
cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  return recordError(copyStreamAttributes(dst, src, DefaultStream::kLegacy));
}
cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  return recordError(copyStreamAttributes(dst, src, DefaultStream::kPerThread));
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  bindPrimaryContextIfNoneCurrent();
  if (event == nullptr) return recordError(cudaErrorInvalidValue);
  return recordError(createEvent(flags, event));
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) { return recordError(destroyEvent(event)); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return recordError(recordEvent(event, stream, cudaEventRecordDefault, DefaultStream::kLegacy));
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return recordError(recordEvent(event, stream, cudaEventRecordDefault, DefaultStream::kPerThread));
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return recordError(recordEvent(event, stream, flags, DefaultStream::kLegacy));
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return recordError(recordEvent(event, stream, flags, DefaultStream::kPerThread));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) { return recordError(synchronizeEvent(event)); }

cudaError_t cudaEventQuery(cudaEvent_t event) { return recordUnlessNotReady(queryEvent(event)); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return recordError(cudaErrorInvalidValue);
  return recordUnlessNotReady(eventElapsedTime(start, end, ms));
}

}  // extern "C"
