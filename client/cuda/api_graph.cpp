// CUDA graphs through the driver API (libcuda.so.1 exports): stream capture and the executable
// graph's life, on the session's graphs (client/session/graph.h), which the runtime shim's graphs
// are too (a CUgraph and a cudaGraph_t are the same handle). A statically linked runtime and the
// math libraries reach capture through these. Nodes: api_graph_nodes.cpp, api_graph_memory.cpp;
// changes to executable graphs: api_graph_exec_nodes.cpp.
#include <cuda.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "client/cuda/driver_call.h"
#include "client/session/graph.h"
#include "client/session/graph_api.h"
#include "client/session/graph_launch.h"
#include "client/session/stream_capture.h"
#include "client/session/streams.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

constexpr DefaultStream kLegacy = DefaultStream::kLegacy;
constexpr DefaultStream kPerThread = DefaultStream::kPerThread;

ExecutableGraph* executableOf(CUgraphExec exec) { return reinterpret_cast<ExecutableGraph*>(exec); }

CUresult streamToken(CUstream stream, DefaultStream spelling, std::uint64_t* token) {
  return toDriverResult(resolveStream(reinterpret_cast<cudaStream_t>(stream), spelling, token));
}

cudaStream_t runtimeStream(CUstream stream) { return reinterpret_cast<cudaStream_t>(stream); }

int modeOf(const CUstreamCaptureMode& mode) {
  int value = 0;  // any bit pattern may come: read as an integer, not as the enum
  static_assert(sizeof value == sizeof mode);
  std::memcpy(&value, &mode, sizeof value);
  return value;
}

CUresult beginCapture(CUstream stream, CUstreamCaptureMode mode, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(graph_api::beginStreamCapture(runtimeStream(stream), spelling, modeOf(mode), nullptr,
                                                      nullptr, nullptr, 0));
}

CUresult endCapture(CUstream stream, CUgraph* graph, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(graph_api::endStreamCapture(runtimeStream(stream), spelling, graph));
}

CUresult instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(graph_api::instantiate(exec, graph, flags));
}

CUresult launch(CUgraphExec exec, CUstream stream, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (CUresult result = streamToken(stream, spelling, &token); result != CUDA_SUCCESS) return result;
  return toDriverResult(launchLiveExecutable(executableOf(exec), token));
}

CUresult upload(CUgraphExec exec, CUstream stream, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (CUresult result = streamToken(stream, spelling, &token); result != CUDA_SUCCESS) return result;
  return toDriverResult(graph_api::uploadExecutable(exec, token));
}

CUresult beginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode* dependencies,
                             const CUgraphEdgeData* edgeData, size_t count, CUstreamCaptureMode mode,
                             DefaultStream spelling) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(
      graph_api::beginStreamCapture(runtimeStream(stream), spelling, modeOf(mode), graph, dependencies,
                                    reinterpret_cast<const cudaGraphEdgeData*>(edgeData), count));
}

CUresult updateDependencies(CUstream stream, CUgraphNode* dependencies, const CUgraphEdgeData* edgeData,
                            size_t count, unsigned flags, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(graph_api::updateStreamCaptureDependencies(
      runtimeStream(stream), spelling, dependencies, reinterpret_cast<const cudaGraphEdgeData*>(edgeData),
      count, flags));
}

}  // namespace

extern "C" {

// The first form (CUDA 10.0) captures in global mode.
CUresult cuStreamBeginCapture(CUstream hStream) {
  return beginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, kLegacy);
}
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return beginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, kPerThread);
}
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return beginCapture(hStream, mode, kLegacy);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return beginCapture(hStream, mode, kPerThread);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return endCapture(hStream, phGraph, kLegacy);
}
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return endCapture(hStream, phGraph, kPerThread);
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode) {
  return beginCaptureToGraph(hStream, hGraph, dependencies, dependencyData, numDependencies, mode, kLegacy);
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode) {
  return beginCaptureToGraph(hStream, hGraph, dependencies, dependencyData, numDependencies, mode,
                             kPerThread);
}

CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies,
                                           size_t numDependencies, unsigned int flags) {
  return updateDependencies(hStream, dependencies, nullptr, numDependencies, flags, kLegacy);
}
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                size_t numDependencies, unsigned int flags) {
  return updateDependencies(hStream, dependencies, nullptr, numDependencies, flags, kPerThread);
}
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode* dependencies,
                                              const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                              unsigned int flags) {
  return updateDependencies(hStream, dependencies, dependencyData, numDependencies, flags, kLegacy);
}
CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                   const CUgraphEdgeData* dependencyData,
                                                   size_t numDependencies, unsigned int flags) {
  return updateDependencies(hStream, dependencies, dependencyData, numDependencies, flags, kPerThread);
}

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return toDriverResult(graph_api::createGraph(phGraph, flags));
}

CUresult cuGraphDestroy(CUgraph hGraph) { return toDriverResult(graph_api::destroyGraph(hGraph)); }

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return toDriverResult(graph_api::getNodes(hGraph, nodes, numNodes));
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaGraphNodeType read{};
  if (cudaError_t error = graph_api::nodeType(hNode, &read); error != cudaSuccess)
    return toDriverResult(error);
  *type = static_cast<CUgraphNodeType>(read);
  return CUDA_SUCCESS;
}

// The first form (CUDA 10.0): no flags, and an error node and log the runtime never fills here.
CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                            char* logBuffer, size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return instantiate(phGraphExec, hGraph, 0);
}
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                               char* logBuffer, size_t bufferSize) {
  return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  return instantiate(phGraphExec, hGraph, flags);
}
CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  if (instantiateParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  instantiateParams->hErrNode_out = nullptr;
  instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  // The runtime's and the driver's results are the same numbers.
  static_assert(
      static_cast<int>(CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE) ==
          static_cast<int>(cudaGraphInstantiateInvalidStructure) &&
      static_cast<int>(CUDA_GRAPH_INSTANTIATE_ERROR) == static_cast<int>(cudaGraphInstantiateError) &&
      static_cast<int>(CUDA_GRAPH_INSTANTIATE_SUCCESS) == static_cast<int>(cudaGraphInstantiateSuccess));
  cudaGraphInstantiateResult outcome = cudaGraphInstantiateError;
  const CUresult result = toDriverResult(graph_api::instantiateWithResult(
      phGraphExec, hGraph, instantiateParams->flags, &outcome, &instantiateParams->hErrNode_out));
  instantiateParams->result_out = static_cast<CUgraphInstantiateResult>(outcome);
  return result;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return toDriverResult(destroyLiveExecutable(executableOf(hGraphExec)));
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream, kLegacy);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream, kPerThread);
}
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  return upload(hGraphExec, hStream, kLegacy);
}
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return upload(hGraphExec, hStream, kPerThread);
}

}  // extern "C"
