// FakeGpuBackend: streams and events, as counted objects with checked lifetimes.
#include "worker/testing/fake_gpu/fake_gpu_backend.h"

namespace agileos::worker {
namespace {

bool isSpecialStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

}  // namespace

bool FakeGpuBackend::streamUsable(CUstream stream) {
  if (isSpecialStream(stream) || streams_.contains(stream)) return true;
  misuse_.push_back("use of a dead stream " + hex(stream));
  return false;
}

// Streams and events ---------------------------------------------------------------------

CUresult FakeGpuBackend::streamCreate(unsigned flags, int priority, CUstream* stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamCreate)) return *injected;
  if (stream == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  (void)priority;  // the driver clamps priorities into the range; nothing here depends on it
  if (config_.reuseDestroyedStreamHandles && !destroyedStreams_.empty()) {
    *stream = destroyedStreams_.back();
    destroyedStreams_.pop_back();
  } else {
    *stream = reinterpret_cast<CUstream>(nextObject_ += 0x10);
  }
  streams_.emplace(*stream, nextStreamId_++);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamDestroy(CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamDestroy)) return *injected;
  if (streams_.erase(stream) == 0) {
    return misused("streamDestroy of a stream that is not live: " + hex(stream), CUDA_ERROR_INVALID_HANDLE);
  }
  std::erase_if(streamAttributes_, [stream](const auto& entry) { return entry.first.first == stream; });
  if (config_.reuseDestroyedStreamHandles) destroyedStreams_.push_back(stream);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamSynchronize(CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamSynchronize)) return *injected;
  return streamUsable(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult FakeGpuBackend::streamQuery(CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamQuery)) return *injected;
  return streamUsable(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult FakeGpuBackend::streamGetId(CUstream stream, unsigned long long* id) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamGetId)) return *injected;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (stream == CU_STREAM_PER_THREAD) {
    *id = kPerThreadStreamId;
  } else {
    *id = isSpecialStream(stream) ? kLegacyStreamId : streams_.at(stream);
  }
  return CUDA_SUCCESS;
}

// Remembers each set value and answers it back; an attribute never set reads as zeros (the
// driver's defaults are zero for the ids the worker admits, except the synchronization policy,
// which tests do not read unset).
CUresult FakeGpuBackend::streamSetAttribute(CUstream stream, CUlaunchAttributeID id,
                                            const CUlaunchAttributeValue& value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamSetAttribute)) return *injected;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  streamAttributes_[{stream, static_cast<int>(id)}] = value;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamGetAttribute(CUstream stream, CUlaunchAttributeID id,
                                            CUlaunchAttributeValue* value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamGetAttribute)) return *injected;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto found = streamAttributes_.find({stream, static_cast<int>(id)});
  *value = found != streamAttributes_.end() ? found->second : CUlaunchAttributeValue{};
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamWaitEvent)) return *injected;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!events_.contains(event))
    return misused("streamWaitEvent on a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  if ((flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::streamPriorityRange(int* least, int* greatest) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kStreamPriorityRange)) return *injected;
  if (least != nullptr) *least = kLeastStreamPriority;
  if (greatest != nullptr) *greatest = kGreatestStreamPriority;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventCreate(unsigned flags, CUevent* event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventCreate)) return *injected;
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (event == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *event = reinterpret_cast<CUevent>(nextObject_ += 0x10);
  events_.emplace(*event, Event{flags, std::nullopt});
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventDestroy(CUevent event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventDestroy)) return *injected;
  if (events_.erase(event) == 0) {
    return misused("eventDestroy of an event that is not live: " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  }
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventRecord(CUevent event, CUstream stream, unsigned flags) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventRecord)) return *injected;
  auto it = events_.find(event);
  if (it == events_.end())
    return misused("eventRecord of a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags == CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_ILLEGAL_STATE;  // only valid during graph capture
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  it->second.recordedAt = ++clock_;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventSynchronize(CUevent event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventSynchronize)) return *injected;
  if (!events_.contains(event))
    return misused("eventSynchronize of a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventQuery(CUevent event) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventQuery)) return *injected;
  if (!events_.contains(event))
    return misused("eventQuery of a dead event " + hex(event), CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::eventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kEventElapsedTime)) return *injected;
  auto first = events_.find(start);
  auto second = events_.find(end);
  if (first == events_.end() || second == events_.end()) {
    return misused("eventElapsedTime with a dead event", CUDA_ERROR_INVALID_HANDLE);
  }
  if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Measured: unrecorded events and events without timing give CUDA_ERROR_INVALID_HANDLE.
  for (const Event* event : {&first->second, &second->second}) {
    if (!event->recordedAt || (event->flags & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  *milliseconds =
      (static_cast<float>(*second->second.recordedAt) - static_cast<float>(*first->second.recordedAt)) *
      kEventTickMs;
  return CUDA_SUCCESS;
}

}  // namespace agileos::worker
