// CUDA graphs: building and inspecting them (cudart exports). Graphs are the client's own
// records (client/session/graph.h says why): nothing here reaches the worker; a graph's work is
// validated by the worker each time it is launched (api_graph_exec.cpp). Each call is written once
// for both shims in client/session/graph_api.h; here its error is recorded.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/graph_api.h"
#include "client/session/graph_dot.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
using namespace agileos::client::graph_api;

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  return recordError(createGraph(pGraph, flags));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) { return recordError(destroyGraph(graph)); }

cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  return recordError(cloneGraph(pGraphClone, originalGraph));
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode,
                                     cudaGraph_t clonedGraph) {
  return recordError(findInClone(pNode, originalNode, clonedGraph));
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const struct cudaKernelNodeParams* pNodeParams) {
  return recordError(addKernelNode(pGraphNode, graph, pDependencies, numDependencies, pNodeParams));
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const struct cudaMemcpy3DParms* pCopyParams) {
  CopyWork work;
  const cudaError_t built = copyWork(pCopyParams, &work);
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies, void* dst,
                                     const void* src, size_t count, enum cudaMemcpyKind kind) {
  CopyWork work;
  const cudaError_t built = copyWork1D(dst, src, count, kind, &work);
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                           const void* symbol, const void* src, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind) {
  if (!copiesToSymbol(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  std::uint64_t address = 0;
  if (cudaError_t error = symbolRange(symbol, count, offset, &address); error != cudaSuccess) {
    return recordError(error);
  }
  CopyWork work;
  const cudaError_t built = copyWork1D(reinterpret_cast<void*>(address), src, count, kind, &work);
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                             void* dst, const void* symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind) {
  if (!copiesFromSymbol(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  std::uint64_t address = 0;
  if (cudaError_t error = symbolRange(symbol, count, offset, &address); error != cudaSuccess) {
    return recordError(error);
  }
  CopyWork work;
  const cudaError_t built = copyWork1D(dst, reinterpret_cast<const void*>(address), count, kind, &work);
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const struct cudaMemsetParams* pMemsetParams) {
  FillWork work;
  const cudaError_t built = fillWork(pMemsetParams, &work);
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemset, built, work));
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                 const struct cudaHostNodeParams* pNodeParams) {
  HostWork work;
  const cudaError_t built = hostWork(pNodeParams, &work);
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kHost, built, work));
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                  const cudaGraphNode_t* pDependencies, size_t numDependencies) {
  return recordError(
      addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kEmpty, cudaSuccess, EmptyWork{}));
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                        cudaEvent_t event) {
  return recordError(
      addEventNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kEventRecord, event));
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      cudaEvent_t event) {
  return recordError(
      addEventNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kEventWait, event));
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
  return recordError(addChildGraphNode(pGraphNode, graph, pDependencies, numDependencies, childGraph));
}

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out, cudaGraph_t graph,
                                             unsigned int defaultLaunchValue, unsigned int flags) {
  return recordError(createConditionalHandle(pHandle_out, graph, defaultLaunchValue, flags));
}

cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int flags) {
  (void)flags;  // the detail is the same whatever they ask (graph_dot.h)
  return recordError(printGraphDot(graphOf(graph), path));
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  return recordError(childGraphOf(node, pGraph));
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) { return recordError(destroyNode(node)); }

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                     const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                     size_t numDependencies) {
  return recordError(addDependencies(graph, from, to, edgeData, numDependencies));
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                        const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                        size_t numDependencies) {
  return recordError(removeDependencies(graph, from, to, edgeData, numDependencies));
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  return recordError(getNodes(graph, nodes, numNodes));
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes, size_t* pNumRootNodes) {
  return recordError(getRootNodes(graph, pRootNodes, pNumRootNodes));
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edgeData, size_t* numEdges) {
  return recordError(getEdges(graph, from, to, edgeData, numEdges));
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                         cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
  return recordError(getDependencies(node, pDependencies, edgeData, pNumDependencies));
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                           cudaGraphEdgeData* edgeData, size_t* pNumDependentNodes) {
  return recordError(getDependents(node, pDependentNodes, edgeData, pNumDependentNodes));
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* pType) {
  return recordError(nodeType(node, pType));
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams* pNodeParams) {
  return recordError(kernelNodeParams(node, pNodeParams));
}

// The node keeps its launch attributes (cudaGraphKernelNodeSetAttribute's), as natively.
cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                         const struct cudaKernelNodeParams* pNodeParams) {
  return recordError(setKernelNodeParams(node, pNodeParams));
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  NodeWork work;
  if (cudaError_t error = nodeWork(node, NodeKind::kMemcpy, &work); error != cudaSuccess) {
    return recordError(error);
  }
  *pNodeParams = copyParams(std::get<CopyWork>(work));
  return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms* pNodeParams) {
  CopyWork work;
  const cudaError_t built = copyWork(pNodeParams, &work);
  return recordError(setNodeWork(node, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind) {
  CopyWork work;
  const cudaError_t built = copyWork1D(dst, src, count, kind, &work);
  return recordError(setNodeWork(node, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  NodeWork work;
  if (cudaError_t error = nodeWork(node, NodeKind::kMemset, &work); error != cudaSuccess) {
    return recordError(error);
  }
  *pNodeParams = fillParams(std::get<FillWork>(work));
  return cudaSuccess;
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const struct cudaMemsetParams* pNodeParams) {
  FillWork work;
  const cudaError_t built = fillWork(pNodeParams, &work);
  return recordError(setNodeWork(node, NodeKind::kMemset, built, work));
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  NodeWork work;
  if (cudaError_t error = nodeWork(node, NodeKind::kHost, &work); error != cudaSuccess) {
    return recordError(error);
  }
  const auto& host = std::get<HostWork>(work);
  pNodeParams->fn = host.function;
  pNodeParams->userData = host.userData;
  return cudaSuccess;
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const struct cudaHostNodeParams* pNodeParams) {
  HostWork work;
  const cudaError_t built = hostWork(pNodeParams, &work);
  return recordError(setNodeWork(node, NodeKind::kHost, built, work));
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  return recordError(eventNodeEvent(node, NodeKind::kEventRecord, event_out));
}

cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return recordError(setEventNodeEvent(node, NodeKind::kEventRecord, event));
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  return recordError(eventNodeEvent(node, NodeKind::kEventWait, event_out));
}

cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return recordError(setEventNodeEvent(node, NodeKind::kEventWait, event));
}

}  // extern "C"
