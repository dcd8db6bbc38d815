// Stream identity and stream-capture status (cudart exports).
//
// AgileOS does not offer stream capture (cudaStreamBeginCapture fails closed: a
// graph would replay work the worker has not validated call by call), so no stream
// is ever capturing and the capture queries answer cudaStreamCaptureStatusNone.
// They still validate the stream with the worker first: a forged or destroyed
// stream is cudaErrorInvalidResourceHandle, as natively, not "not capturing".
#include <cuda_runtime_api.h>

#include <cstring>

#include "client/session/error_state.h"
#include "client/session/stream_event_calls.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

cudaError_t getId(cudaStream_t stream, unsigned long long* id, DefaultStream spelling) {
  if (id == nullptr) return recordError(cudaErrorInvalidValue);
  return recordError(streamId(stream, spelling, id));
}

cudaError_t getDevice(cudaStream_t stream, int* device, DefaultStream spelling) {
  if (device == nullptr) return recordError(cudaErrorInvalidValue);
  unsigned long long id = 0;
  if (cudaError_t error = streamId(stream, spelling, &id); error != cudaSuccess) return recordError(error);
  *device = 0;  // every stream of a client is on its one device
  return cudaSuccess;
}

cudaError_t isCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status, DefaultStream spelling) {
  if (status == nullptr) return recordError(cudaErrorInvalidValue);
  unsigned long long id = 0;
  if (cudaError_t error = streamId(stream, spelling, &id); error != cudaSuccess) return recordError(error);
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

// The documented contract: only the status is valid unless it is Active; the
// optional outputs are cleared so that nothing stale is read as a capture.
cudaError_t getCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                           cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                           const cudaGraphEdgeData** edgeData, size_t* numDependencies,
                           DefaultStream spelling) {
  if (status == nullptr) return recordError(cudaErrorInvalidValue);
  if (edgeData != nullptr && dependencies == nullptr) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = isCapturing(stream, status, spelling); error != cudaSuccess) return error;
  if (id != nullptr) *id = 0;
  if (graph != nullptr) *graph = nullptr;
  if (dependencies != nullptr) *dependencies = nullptr;
  if (edgeData != nullptr) *edgeData = nullptr;
  if (numDependencies != nullptr) *numDependencies = 0;
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  return getId(hStream, streamId, DefaultStream::kLegacy);
}
cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long* streamId) {
  return getId(hStream, streamId, DefaultStream::kPerThread);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  return getDevice(hStream, device, DefaultStream::kLegacy);
}
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int* device) {
  return getDevice(hStream, device, DefaultStream::kPerThread);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pCaptureStatus) {
  return isCapturing(stream, pCaptureStatus, DefaultStream::kLegacy);
}
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus* pCaptureStatus) {
  return isCapturing(stream, pCaptureStatus, DefaultStream::kPerThread);
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out,
                                     const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return getCaptureInfo(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out, DefaultStream::kLegacy);
}
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                          enum cudaStreamCaptureStatus* captureStatus_out,
                                          unsigned long long* id_out, cudaGraph_t* graph_out,
                                          const cudaGraphNode_t** dependencies_out,
                                          const cudaGraphEdgeData** edgeData_out,
                                          size_t* numDependencies_out) {
  return getCaptureInfo(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out, DefaultStream::kPerThread);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return recordError(cudaErrorInvalidValue);
  // The program may pass any bit pattern: read it as an integer (loading an enum
  // object that holds no enumerator is undefined behaviour).
  int requested = 0;
  static_assert(sizeof requested == sizeof *mode);
  std::memcpy(&requested, mode, sizeof requested);
  if (cudaError_t error = exchangeCaptureMode(&requested); error != cudaSuccess) return recordError(error);
  std::memcpy(mode, &requested, sizeof requested);
  return cudaSuccess;
}

}  // extern "C"
