// Stream identity and stream capture (cudart exports). Capture is the client's
// (client/session/stream_capture.h): work on a capturing stream becomes graph nodes, which the
// worker validates when a graph made of them is launched. The capture queries still validate
// the stream with the worker first: a forged or destroyed stream is
// cudaErrorInvalidResourceHandle, as natively, not "not capturing".
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/graph_api.h"
#include "client/session/stream_capture.h"
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
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  *status = captureInfo(token).status;
  return cudaSuccess;
}

// The documented contract: only the status is valid unless it is Active; the
// optional outputs are cleared then so that nothing stale is read as a capture.
cudaError_t getCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                           cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                           const cudaGraphEdgeData** edgeData, size_t* numDependencies,
                           DefaultStream spelling) {
  if (status == nullptr) return recordError(cudaErrorInvalidValue);
  if (edgeData != nullptr && dependencies == nullptr) return recordError(cudaErrorInvalidValue);
  unsigned long long streamIdentity = 0;
  if (cudaError_t error = streamId(stream, spelling, &streamIdentity); error != cudaSuccess) {
    return recordError(error);
  }
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  const CaptureInfo info = captureInfo(token);
  *status = info.status;
  const bool active = info.status == cudaStreamCaptureStatusActive;
  if (id != nullptr) *id = active ? info.id : 0;
  if (graph != nullptr) *graph = active ? graph_api::handleOf(info.graph) : nullptr;
  const size_t count = active ? info.dependencies->size() : 0;
  if (dependencies != nullptr) {
    *dependencies = count > 0 ? reinterpret_cast<const cudaGraphNode_t*>(info.dependencies->data()) : nullptr;
  }
  if (edgeData != nullptr) {
    // Every edge a capture makes is a default edge.
    thread_local std::vector<cudaGraphEdgeData> tDefaultEdges;
    tDefaultEdges.assign(count, cudaGraphEdgeData{});
    *edgeData = count > 0 ? tDefaultEdges.data() : nullptr;
  }
  if (numDependencies != nullptr) *numDependencies = count;
  return cudaSuccess;
}

cudaError_t beginCapture(cudaStream_t stream, cudaStreamCaptureMode mode, cudaGraph_t graph,
                         const cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edgeData, size_t count,
                         DefaultStream spelling) {
  const int modeValue = enumBits(mode);  // any bit pattern may come
  return recordError(
      graph_api::beginStreamCapture(stream, spelling, modeValue, graph, dependencies, edgeData, count));
}

cudaError_t endCapture(cudaStream_t stream, cudaGraph_t* graph, DefaultStream spelling) {
  return recordError(graph_api::endStreamCapture(stream, spelling, graph));
}

cudaError_t updateDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                               const cudaGraphEdgeData* edgeData, size_t count, unsigned flags,
                               DefaultStream spelling) {
  return recordError(
      graph_api::updateStreamCaptureDependencies(stream, spelling, dependencies, edgeData, count, flags));
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

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return beginCapture(stream, mode, nullptr, nullptr, nullptr, 0, DefaultStream::kLegacy);
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return beginCapture(stream, mode, nullptr, nullptr, nullptr, 0, DefaultStream::kPerThread);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                          enum cudaStreamCaptureMode mode) {
  if (graph == nullptr) return recordError(cudaErrorInvalidValue);
  return beginCapture(stream, mode, graph, dependencies, dependencyData, numDependencies,
                      DefaultStream::kLegacy);
}
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t* dependencies,
                                               const cudaGraphEdgeData* dependencyData,
                                               size_t numDependencies, enum cudaStreamCaptureMode mode) {
  if (graph == nullptr) return recordError(cudaErrorInvalidValue);
  return beginCapture(stream, mode, graph, dependencies, dependencyData, numDependencies,
                      DefaultStream::kPerThread);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return endCapture(stream, pGraph, DefaultStream::kLegacy);
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  return endCapture(stream, pGraph, DefaultStream::kPerThread);
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                const cudaGraphEdgeData* dependencyData,
                                                size_t numDependencies, unsigned int flags) {
  return updateDependencies(stream, dependencies, dependencyData, numDependencies, flags,
                            DefaultStream::kLegacy);
}
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                     const cudaGraphEdgeData* dependencyData,
                                                     size_t numDependencies, unsigned int flags) {
  return updateDependencies(stream, dependencies, dependencyData, numDependencies, flags,
                            DefaultStream::kPerThread);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return recordError(cudaErrorInvalidValue);
  int requested = enumBits(*mode);  // the program may pass any bit pattern
  if (cudaError_t error = exchangeCaptureMode(&requested); error != cudaSuccess) return recordError(error);
  std::memcpy(mode, &requested, sizeof requested);
  return cudaSuccess;
}

}  // extern "C"
