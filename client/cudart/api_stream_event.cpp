// Streams and events (cudart exports). Handles are worker tokens; a forged or
// stale one is refused by the worker with cudaErrorInvalidResourceHandle.
#include <cuda_runtime_api.h>

#include "client/cudart/error_state.h"
#include "client/cudart/resource_epoch.h"
#include "client/cudart/runtime.h"
#include "client/cudart/streams.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

std::uint64_t tokenOf(cudaEvent_t event) { return reinterpret_cast<std::uint64_t>(event); }

cudaError_t createStream(cudaStream_t* pStream, unsigned flags, int priority) {
  if (pStream == nullptr) return recordError(cudaErrorInvalidValue);
  agileos::v1::CallRequest request;
  request.mutable_stream_create()->set_flags(flags);
  request.mutable_stream_create()->set_priority(priority);
  agileos::v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  if (error != cudaSuccess) return recordError(error);
  rememberStream(reply.token().token(), flags, priority);
  *pStream = reinterpret_cast<cudaStream_t>(reply.token().token());
  return cudaSuccess;
}

cudaError_t streamSynchronize(cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  agileos::v1::CallRequest request;
  request.mutable_stream_synchronize()->set_stream(token);
  agileos::v1::CallReply reply;
  const std::uint64_t mark = workMark();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) noteStreamIdle(token, mark);
  return recordError(error);
}

cudaError_t streamQuery(cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (streamSurelyIdle(token)) return cudaSuccess;  // nothing posted since it was seen idle
  agileos::v1::CallRequest request;
  request.mutable_stream_query()->set_stream(token);
  agileos::v1::CallReply reply;
  const std::uint64_t mark = workMark();
  cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) noteStreamIdle(token, mark);
  return error == cudaErrorNotReady ? error : recordError(error);  // "not ready" is a status, not an error
}

cudaError_t streamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  agileos::v1::CallRequest request;
  auto* wait = request.mutable_stream_wait_event();
  wait->set_stream(token);
  wait->set_event(tokenOf(event));
  wait->set_flags(flags);
  noteWorkPosted(token);
  // On a live event and a known stream, the record goes out without waiting; anything else
  // is asked synchronously, so a bad handle gets the worker's answer at once.
  if (isLiveEvent(tokenOf(event)) && isKnownStream(token)) return recordError(invokeAsync(request));
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
}

cudaError_t streamProperties(cudaStream_t stream, DefaultStream spelling, unsigned* flags, int* priority) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (!agileos::client::streamProperties(token, flags, priority)) {
    return recordError(cudaErrorInvalidResourceHandle);
  }
  return cudaSuccess;
}

cudaError_t eventRecord(cudaEvent_t event, cudaStream_t stream, unsigned flags, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  agileos::v1::CallRequest request;
  auto* record = request.mutable_event_record();
  record->set_event(tokenOf(event));
  record->set_stream(token);
  record->set_flags(flags);
  noteWorkPosted(token);
  if (isLiveEvent(tokenOf(event)) && isKnownStream(token)) return recordError(invokeAsync(request));
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* pStream) { return createStream(pStream, cudaStreamDefault, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return createStream(pStream, flags, 0);
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  return createStream(pStream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  const auto token = reinterpret_cast<std::uint64_t>(stream);
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return recordError(cudaErrorInvalidResourceHandle);
  }
  agileos::v1::CallRequest request;
  request.mutable_stream_destroy()->set_stream(token);
  agileos::v1::CallReply reply;
  noteResourcesReleased();
  cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) forgetStream(token);
  return recordError(error);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return streamSynchronize(stream, DefaultStream::kLegacy);
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return streamSynchronize(stream, DefaultStream::kPerThread);
}
cudaError_t cudaStreamQuery(cudaStream_t stream) { return streamQuery(stream, DefaultStream::kLegacy); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  return streamQuery(stream, DefaultStream::kPerThread);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return streamWaitEvent(stream, event, flags, DefaultStream::kLegacy);
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return streamWaitEvent(stream, event, flags, DefaultStream::kPerThread);
}
cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  if (flags == nullptr) return recordError(cudaErrorInvalidValue);
  int priority = 0;
  return streamProperties(hStream, DefaultStream::kLegacy, flags, &priority);
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int* flags) {
  if (flags == nullptr) return recordError(cudaErrorInvalidValue);
  int priority = 0;
  return streamProperties(hStream, DefaultStream::kPerThread, flags, &priority);
}
cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  if (priority == nullptr) return recordError(cudaErrorInvalidValue);
  unsigned flags = 0;
  return streamProperties(hStream, DefaultStream::kLegacy, &flags, priority);
}
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int* priority) {
  if (priority == nullptr) return recordError(cudaErrorInvalidValue);
  unsigned flags = 0;
  return streamProperties(hStream, DefaultStream::kPerThread, &flags, priority);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return recordError(cudaErrorInvalidValue);
  agileos::v1::CallRequest request;
  request.mutable_event_create()->set_flags(flags);
  agileos::v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  if (error != cudaSuccess) return recordError(error);
  *event = reinterpret_cast<cudaEvent_t>(reply.token().token());
  rememberEvent(reply.token().token());
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  agileos::v1::CallRequest request;
  request.mutable_event_destroy()->set_event(tokenOf(event));
  agileos::v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) forgetEvent(tokenOf(event));
  return recordError(error);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return eventRecord(event, stream, cudaEventRecordDefault, DefaultStream::kLegacy);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return eventRecord(event, stream, cudaEventRecordDefault, DefaultStream::kPerThread);
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return eventRecord(event, stream, flags, DefaultStream::kLegacy);
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return eventRecord(event, stream, flags, DefaultStream::kPerThread);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  agileos::v1::CallRequest request;
  request.mutable_event_synchronize()->set_event(tokenOf(event));
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  agileos::v1::CallRequest request;
  request.mutable_event_query()->set_event(tokenOf(event));
  agileos::v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  return error == cudaErrorNotReady ? error : recordError(error);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return recordError(cudaErrorInvalidValue);
  agileos::v1::CallRequest request;
  request.mutable_event_elapsed_time()->set_start(tokenOf(start));
  request.mutable_event_elapsed_time()->set_end(tokenOf(end));
  agileos::v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *ms = reply.elapsed_time().milliseconds();
  return error == cudaErrorNotReady ? error : recordError(error);
}

}  // extern "C"
