// Streams and events, shared by the runtime and the driver shims (untrusted side). Handles are
// worker tokens (a cudaStream_t and a CUstream are the same handle, as are a cudaEvent_t and a
// CUevent); a forged or stale one is refused by the worker with cudaErrorInvalidResourceHandle.
//
// Each returns the call's error without recording it: the runtime shim records it as the
// thread's last error, the driver shim translates it to a CUresult.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "client/session/kernel_launch.h"
#include "client/session/streams.h"

namespace agileos::client {

cudaError_t createStream(unsigned flags, int priority, cudaStream_t* stream);
cudaError_t destroyStream(cudaStream_t stream);
cudaError_t synchronizeStream(cudaStream_t stream, DefaultStream spelling);
// cudaErrorNotReady while work is pending (a status, not an error).
cudaError_t queryStream(cudaStream_t stream, DefaultStream spelling);
cudaError_t waitEventOnStream(cudaStream_t stream, cudaEvent_t event, unsigned flags, DefaultStream spelling);
// The flags and priority a stream was created with (the legacy and per-thread streams included).
cudaError_t streamCreationProperties(cudaStream_t stream, DefaultStream spelling, unsigned* flags,
                                     int* priority);

// Host functions and stream callbacks. The worker's streams cannot call back into the client's
// code, so a host function runs conservatively: the stream is synchronized through the worker and
// the function is called on the calling thread before the call returns. It thus runs after all
// work enqueued earlier on the stream and before any work enqueued later, the ordering CUDA
// guarantees; the calling thread blocks until the stream has drained, and the function runs on it
// rather than on a driver thread (CUDA forbids callbacks from calling CUDA, so a conforming one
// cannot tell which thread it runs on).
//
// True for the errors of synchronizeStream that mean a host function could not have been enqueued
// at all (a bad stream handle, no worker, a capturing stream: stream callbacks cannot be
// captured), rather than an error of earlier work.
bool hostFunctionNotEnqueued(cudaError_t error);

// cudaLaunchHostFunc and cuLaunchHostFunc: as above, or a host node of the stream's capture.
cudaError_t runHostFunction(cudaStream_t stream, DefaultStream spelling, cudaHostFn_t function,
                            void* userData);

// The stream's id from the worker, which also proves the stream is live.
cudaError_t streamId(cudaStream_t stream, DefaultStream spelling, unsigned long long* id);

// cudaStreamSetAttribute / cudaStreamGetAttribute and the driver's (an attribute id is a launch
// attribute's): a set sends *value; a get sends value->id and fills *value with the driver's
// answer. The worker admits the kinds it admits for a launch.
cudaError_t streamAttribute(cudaStream_t stream, DefaultStream spelling, bool set,
                            LaunchAttributeValue* value);
// The same on the program's attribute union (cudaStreamAttrValue, CUstreamAttrValue: one layout),
// read as readLaunchAttributes reads a list entry.
cudaError_t setStreamAttribute(cudaStream_t stream, int id, const void* value, DefaultStream spelling);
cudaError_t getStreamAttribute(cudaStream_t stream, int id, void* value, DefaultStream spelling);
// cudaStreamCopyAttributes / cuStreamCopyAttributes: every attribute a stream may carry, read from
// `source` and set on `destination`.
cudaError_t copyStreamAttributes(cudaStream_t destination, cudaStream_t source, DefaultStream spelling);

// The calling thread's stream-capture interaction mode, shared by both shims: `*mode` (a
// cudaStreamCaptureMode, equal to the CUstreamCaptureMode of the same name, passed as an int
// because the program may pass any bit pattern) becomes the thread's mode and receives the old
// one; cudaErrorInvalidValue for a value that is no mode. With no capture it governs nothing,
// but a program reads back what it set.
cudaError_t exchangeCaptureMode(int* mode);

cudaError_t createEvent(unsigned flags, cudaEvent_t* event);
cudaError_t destroyEvent(cudaEvent_t event);
cudaError_t recordEvent(cudaEvent_t event, cudaStream_t stream, unsigned flags, DefaultStream spelling);
// A record or a wait sent to the worker as it is, past stream capture (tokens: a resolved stream and
// an event): for ordering the session makes on its own (graph_launch.cpp), never for the program's
// calls, which recordEvent and waitEventOnStream capture where a capture is under way. While a
// stream captures, none of the capture's work reaches the worker's stream, so a record there marks
// the work queued before the capture began.
cudaError_t recordEventOnWorker(std::uint64_t event, std::uint64_t stream, unsigned flags);
cudaError_t waitEventOnWorker(std::uint64_t stream, std::uint64_t event, unsigned flags);
cudaError_t synchronizeEvent(cudaEvent_t event);
cudaError_t queryEvent(cudaEvent_t event);  // cudaErrorNotReady while pending
cudaError_t eventElapsedTime(cudaEvent_t start, cudaEvent_t end, float* milliseconds);

}  // namespace agileos::client
