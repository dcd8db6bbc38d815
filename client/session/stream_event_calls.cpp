#include "client/session/stream_event_calls.h"

#include <cuda.h>

#include <cstring>

#include "agileos/v1/client_api.pb.h"
#include "client/session/error_state.h"
#include "client/session/launch_attributes.h"
#include "client/session/resource_epoch.h"
#include "client/session/stream_capture.h"
#include "client/session/thread_contexts.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

std::uint64_t tokenOf(cudaEvent_t event) { return reinterpret_cast<std::uint64_t>(event); }

}  // namespace

cudaError_t createStream(unsigned flags, int priority, cudaStream_t* stream) {
  v1::CallRequest request;
  request.mutable_stream_create()->set_flags(flags);
  request.mutable_stream_create()->set_priority(priority);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  // The runtime shim bound the primary context when the thread had none; a driver call works in
  // the current context or, with none, the primary one (thread_contexts.h).
  rememberStream(reply.token().token(), flags, priority, workingContext());
  *stream = reinterpret_cast<cudaStream_t>(reply.token().token());
  return cudaSuccess;
}

cudaError_t destroyStream(cudaStream_t stream) {
  const auto token = reinterpret_cast<std::uint64_t>(stream);
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return cudaErrorInvalidResourceHandle;
  }
  v1::CallRequest request;
  request.mutable_stream_destroy()->set_stream(token);
  v1::CallReply reply;
  noteResourcesReleased();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) forgetStream(token);
  return error;
}

cudaError_t synchronizeStream(cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (auto refused = refusedInCapture(token)) return *refused;
  v1::CallRequest request;
  request.mutable_stream_synchronize()->set_stream(token);
  v1::CallReply reply;
  const std::uint64_t mark = workMark();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) noteStreamIdle(token, mark);
  return error;
}

cudaError_t queryStream(cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (auto refused = refusedInCapture(token)) return *refused;
  if (streamSurelyIdle(token)) return cudaSuccess;  // nothing posted since it was seen idle
  v1::CallRequest request;
  request.mutable_stream_query()->set_stream(token);
  v1::CallReply reply;
  const std::uint64_t mark = workMark();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) noteStreamIdle(token, mark);
  return error;
}

cudaError_t waitEventOnStream(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                              DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (auto captured = capturedEventWait(token, tokenOf(event), flags)) return *captured;
  return waitEventOnWorker(token, tokenOf(event), flags);
}

cudaError_t waitEventOnWorker(std::uint64_t stream, std::uint64_t event, unsigned flags) {
  v1::CallRequest request;
  auto* wait = request.mutable_stream_wait_event();
  wait->set_stream(stream);
  wait->set_event(event);
  wait->set_flags(flags);
  noteWorkPosted(stream);
  // On a live event and a known stream, the wait goes out without waiting; anything else
  // is asked synchronously, so a bad handle gets the worker's answer at once.
  if (isLiveEvent(event) && isKnownStream(stream)) return invokeAsync(request);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t streamCreationProperties(cudaStream_t stream, DefaultStream spelling, unsigned* flags,
                                     int* priority) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (!streamProperties(token, flags, priority)) return cudaErrorInvalidResourceHandle;
  return cudaSuccess;
}

bool hostFunctionNotEnqueued(cudaError_t error) {
  return error == cudaErrorInvalidResourceHandle || error == cudaErrorNoDevice ||
         error == cudaErrorDevicesUnavailable || error == cudaErrorInvalidValue ||
         error == cudaErrorStreamCaptureUnsupported;
}

cudaError_t runHostFunction(cudaStream_t stream, DefaultStream spelling, cudaHostFn_t function,
                            void* userData) {
  if (function == nullptr) return cudaErrorInvalidValue;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (auto captured = capturedWork(token, NodeKind::kHost, HostWork{function, userData})) return *captured;
  if (cudaError_t error = synchronizeStream(stream, spelling); error != cudaSuccess) return error;
  function(userData);
  return cudaSuccess;
}

cudaError_t createEvent(unsigned flags, cudaEvent_t* event) {
  v1::CallRequest request;
  request.mutable_event_create()->set_flags(flags);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  *event = reinterpret_cast<cudaEvent_t>(reply.token().token());
  rememberEvent(reply.token().token());
  return cudaSuccess;
}

cudaError_t destroyEvent(cudaEvent_t event) {
  v1::CallRequest request;
  request.mutable_event_destroy()->set_event(tokenOf(event));
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) {
    forgetEvent(tokenOf(event));
    forgetCapturedEvent(tokenOf(event));
  }
  return error;
}

cudaError_t recordEvent(cudaEvent_t event, cudaStream_t stream, unsigned flags, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (auto captured = capturedEventRecord(tokenOf(event), token, flags)) return *captured;
  return recordEventOnWorker(tokenOf(event), token, flags);
}

cudaError_t recordEventOnWorker(std::uint64_t event, std::uint64_t stream, unsigned flags) {
  v1::CallRequest request;
  auto* record = request.mutable_event_record();
  record->set_event(event);
  record->set_stream(stream);
  record->set_flags(flags);
  noteWorkPosted(stream);
  if (isLiveEvent(event) && isKnownStream(stream)) return invokeAsync(request);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t synchronizeEvent(cudaEvent_t event) {
  v1::CallRequest request;
  request.mutable_event_synchronize()->set_event(tokenOf(event));
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t queryEvent(cudaEvent_t event) {
  v1::CallRequest request;
  request.mutable_event_query()->set_event(tokenOf(event));
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t eventElapsedTime(cudaEvent_t start, cudaEvent_t end, float* milliseconds) {
  v1::CallRequest request;
  request.mutable_event_elapsed_time()->set_start(tokenOf(start));
  request.mutable_event_elapsed_time()->set_end(tokenOf(end));
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *milliseconds = reply.elapsed_time().milliseconds();
  return error;
}

cudaError_t streamId(cudaStream_t stream, DefaultStream spelling, unsigned long long* id) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  if (knownStreamId(token, id)) return cudaSuccess;
  v1::CallRequest request;
  request.mutable_stream_get_id()->set_stream(token);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  *id = reply.stream_id().id();
  rememberStreamId(token, *id);
  return cudaSuccess;
}

cudaError_t streamAttribute(cudaStream_t stream, DefaultStream spelling, bool set,
                            LaunchAttributeValue* value) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  v1::CallRequest request;
  v1::StreamAttribute* args = request.mutable_stream_attribute();
  args->set_stream(token);
  args->set_set(set);
  if (set) {
    writeLaunchAttribute(*value, args->mutable_value());
  } else {
    args->mutable_value()->set_id(value->id);
  }
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  if (!set) *value = launchAttributeFromWire(reply.stream_attribute_value());
  return cudaSuccess;
}

cudaError_t setStreamAttribute(cudaStream_t stream, int id, const void* value, DefaultStream spelling) {
  if (value == nullptr) return cudaErrorInvalidValue;
  CUlaunchAttribute attribute{};
  std::memcpy(&attribute.id, &id, sizeof id);
  std::memcpy(&attribute.value, value, sizeof attribute.value);
  LaunchAttributes read;
  if (cudaError_t error = readLaunchAttributes(&attribute, 1, &read); error != cudaSuccess) return error;
  if (read.count != 1) return cudaErrorInvalidValue;  // cooperative and ignore are not stream attributes
  if (cudaError_t error = streamAttribute(stream, spelling, true, &read.values[0]); error != cudaSuccess)
    return error;
  // A priority set this way is the stream's priority from now on (cudaStreamGetPriority answers it,
  // as natively): the worker's value, which the driver may have clamped, replaces the one
  // remembered at creation.
  if (id == cudaLaunchAttributePriority) {
    std::uint64_t token = 0;
    LaunchAttributeValue answer;
    answer.id = id;
    if (resolveStream(stream, spelling, &token) == cudaSuccess && token != 0 &&
        streamAttribute(stream, spelling, false, &answer) == cudaSuccess) {
      setStreamPriority(token, static_cast<int>(answer.x));
    }
  }
  return cudaSuccess;
}

cudaError_t getStreamAttribute(cudaStream_t stream, int id, void* value, DefaultStream spelling) {
  if (value == nullptr) return cudaErrorInvalidValue;
  LaunchAttributeValue answer;
  answer.id = id;
  if (cudaError_t error = streamAttribute(stream, spelling, false, &answer); error != cudaSuccess)
    return error;
  CUlaunchAttributeValue out;
  launchAttributeValueOf(answer, &out);
  std::memcpy(value, &out, sizeof out);
  return cudaSuccess;
}

cudaError_t copyStreamAttributes(cudaStream_t destination, cudaStream_t source, DefaultStream spelling) {
  // What cuStreamCopyAttributes copies: the attributes a stream carries for its launches.
  for (int id : {int{cudaLaunchAttributeAccessPolicyWindow}, int{cudaLaunchAttributeSynchronizationPolicy},
                 int{cudaLaunchAttributeMemSyncDomainMap}, int{cudaLaunchAttributeMemSyncDomain}}) {
    LaunchAttributeValue value;
    value.id = id;
    if (cudaError_t error = streamAttribute(source, spelling, false, &value); error != cudaSuccess)
      return error;
    if (cudaError_t error = streamAttribute(destination, spelling, true, &value); error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

namespace {
thread_local int tCaptureMode = cudaStreamCaptureModeGlobal;
}  // namespace

cudaError_t exchangeCaptureMode(int* mode) {
  switch (*mode) {
    case cudaStreamCaptureModeGlobal:
    case cudaStreamCaptureModeThreadLocal:
    case cudaStreamCaptureModeRelaxed:
      break;
    default:
      return cudaErrorInvalidValue;
  }
  const int previous = tCaptureMode;
  tCaptureMode = *mode;
  *mode = previous;
  return cudaSuccess;
}

}  // namespace agileos::client
