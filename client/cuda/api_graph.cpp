// CUDA graphs through the driver API (libcuda.so.1 exports): stream capture and the executable
// graph's life, on the session's graphs (client/session/graph.h), which the runtime shim's graphs
// are too (a CUgraph and a cudaGraph_t are the same handle). A statically linked runtime and the
// math libraries reach capture through these. Building graphs node by node with the driver's
// structures (cuGraphAdd*Node) is not offered yet, but for memory nodes (api_graph_memory.cpp).
#include <cuda.h>

#include <cstring>
#include <mutex>

#include "client/cuda/driver_call.h"
#include "client/session/graph.h"
#include "client/session/graph_launch.h"
#include "client/session/stream_capture.h"
#include "client/session/streams.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

constexpr DefaultStream kLegacy = DefaultStream::kLegacy;
constexpr DefaultStream kPerThread = DefaultStream::kPerThread;

Graph* graphOf(CUgraph graph) { return reinterpret_cast<Graph*>(graph); }
ExecutableGraph* executableOf(CUgraphExec exec) { return reinterpret_cast<ExecutableGraph*>(exec); }

CUresult streamToken(CUstream stream, DefaultStream spelling, std::uint64_t* token) {
  return toDriverResult(resolveStream(reinterpret_cast<cudaStream_t>(stream), spelling, token));
}

CUresult beginCapture(CUstream stream, CUstreamCaptureMode mode, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  int modeValue = 0;  // any bit pattern may come: read as an integer, not as the enum
  static_assert(sizeof modeValue == sizeof mode);
  std::memcpy(&modeValue, &mode, sizeof modeValue);
  std::uint64_t token = 0;
  if (CUresult result = streamToken(stream, spelling, &token); result != CUDA_SUCCESS) return result;
  return toDriverResult(agileos::client::beginCapture(token, modeValue, nullptr, {}));
}

CUresult endCapture(CUstream stream, CUgraph* graph, DefaultStream spelling) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (CUresult result = streamToken(stream, spelling, &token); result != CUDA_SUCCESS) return result;
  Graph* captured = nullptr;
  const cudaError_t error = agileos::client::endCapture(token, &captured);
  *graph = reinterpret_cast<CUgraph>(captured);
  return toDriverResult(error);
}

// CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH (graph_launch.h) and _USE_NODE_PRIORITY (order is
// the stream's) are accepted; upload and device launch are not offered.
constexpr unsigned long long kKnownInstantiateFlags =
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

CUresult instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~kKnownInstantiateFlags) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  ExecutableGraph* executable = nullptr;
  if (cudaError_t error = instantiateLiveGraph(graphOf(graph), flags, &executable); error != cudaSuccess) {
    return toDriverResult(error);
  }
  *exec = reinterpret_cast<CUgraphExec>(executable);
  return CUDA_SUCCESS;
}

CUresult launch(CUgraphExec exec, CUstream stream, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (CUresult result = streamToken(stream, spelling, &token); result != CUDA_SUCCESS) return result;
  return toDriverResult(launchLiveExecutable(executableOf(exec), token));
}

// Nothing is uploaded ahead of a launch; the handles are checked.
CUresult upload(CUgraphExec exec, CUstream stream, DefaultStream spelling) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::uint64_t token = 0;
  if (CUresult result = streamToken(stream, spelling, &token); result != CUDA_SUCCESS) return result;
  if (token != 0 && !isKnownStream(token)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(graphMutex());
  return isLiveExecutable(executableOf(exec)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
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

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::lock_guard lock(graphMutex());
  *phGraph = reinterpret_cast<CUgraph>(new Graph());
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  std::lock_guard lock(graphMutex());
  Graph* graph = graphOf(hGraph);
  if (!isLiveGraph(graph) || graph->isChild()) return CUDA_ERROR_INVALID_VALUE;
  delete graph;
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  Graph* graph = graphOf(hGraph);
  if (!isLiveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  const auto& all = graph->nodes();
  if (nodes == nullptr) {
    *numNodes = all.size();
    return CUDA_SUCCESS;
  }
  const size_t written = std::min(all.size(), *numNodes);
  for (size_t i = 0; i < *numNodes; ++i)
    nodes[i] = i < written ? reinterpret_cast<CUgraphNode>(all[i].get()) : nullptr;
  *numNodes = written;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  const Node* node = reinterpret_cast<const Node*>(hNode);
  if (!isLiveNode(node)) return CUDA_ERROR_INVALID_VALUE;
  *type = static_cast<CUgraphNodeType>(node->kind);
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
  const CUresult result = instantiate(phGraphExec, hGraph, instantiateParams->flags);
  instantiateParams->result_out =
      result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
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
