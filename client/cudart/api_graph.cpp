// CUDA graphs: building and inspecting them (cudart exports). Graphs are the client's own
// records (client/session/graph.h says why): nothing here reaches the worker; a graph's work is
// validated by the worker each time it is launched (api_graph_exec.cpp).
#include <cuda_runtime_api.h>

#include <mutex>

#include "client/cudart/graph_params.h"
#include "client/session/error_state.h"
#include "client/session/graph.h"
#include "client/session/graph_dot.h"
#include "client/session/streams.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
using namespace agileos::client::cudart_graphs;

namespace {

std::uint64_t eventToken(cudaEvent_t event) { return reinterpret_cast<std::uint64_t>(event); }

cudaError_t addNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                    size_t count, NodeKind kind, NodeWork work) {
  if (node == nullptr) return recordError(cudaErrorInvalidValue);
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, count, &list); error != cudaSuccess) {
    return recordError(error);
  }
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target)) return recordError(cudaErrorInvalidValue);
  Node* added = nullptr;
  if (cudaError_t error = target->add(kind, std::move(work), list, &added); error != cudaSuccess) {
    return recordError(error);
  }
  *node = handleOf(added);
  return cudaSuccess;
}

// Runs `body` on a live node of `kind` with graphMutex() held.
template <typename Body>
cudaError_t withNode(cudaGraphNode_t handle, NodeKind kind, Body body) {
  std::lock_guard lock(graphMutex());
  Node* node = nodeOf(handle);
  if (!isLiveNode(node) || node->kind != kind) return recordError(cudaErrorInvalidValue);
  return recordError(body(*node));
}

// Replaces a node's work with `work`, which the caller built and checked (`built`: its error).
cudaError_t replaceNodeWork(cudaGraphNode_t handle, NodeKind kind, cudaError_t built, NodeWork work) {
  if (built != cudaSuccess) return recordError(built);
  return withNode(handle, kind, [&](Node& node) {
    node.work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t liveEvent(cudaEvent_t event) {
  return event != nullptr && isLiveEvent(eventToken(event)) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

// Default edge data only (edges of type default, no ports).
bool defaultEdges(const cudaGraphEdgeData* edgeData, size_t count) {
  if (edgeData == nullptr) return true;
  for (size_t i = 0; i < count; ++i) {
    if (edgeData[i].from_port != 0 || edgeData[i].to_port != 0 || edgeData[i].type != 0) return false;
  }
  return true;
}

void zeroEdges(cudaGraphEdgeData* edgeData, size_t count) {
  if (edgeData != nullptr) std::fill(edgeData, edgeData + count, cudaGraphEdgeData{});
}

}  // namespace

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (pGraph == nullptr || flags != 0) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  *pGraph = handleOf(new Graph());
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target) || target->isChild()) return recordError(cudaErrorInvalidValue);
  delete target;
  return cudaSuccess;
}

cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  if (pGraphClone == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Graph* original = graphOf(originalGraph);
  if (!isLiveGraph(original)) return recordError(cudaErrorInvalidValue);
  // A graph with memory nodes cannot be cloned, as in CUDA: its allocations have one address each.
  if (original->hasMemoryNodes()) return recordError(cudaErrorNotSupported);
  *pGraphClone = handleOf(original->clone().release());
  return cudaSuccess;
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode,
                                     cudaGraph_t clonedGraph) {
  if (pNode == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Graph* clone = graphOf(clonedGraph);
  if (!isLiveGraph(clone)) return recordError(cudaErrorInvalidValue);
  for (const auto& node : clone->nodes()) {
    if (node->clonedFrom == nodeOf(originalNode)) {
      *pNode = handleOf(node.get());
      return cudaSuccess;
    }
  }
  return recordError(cudaErrorInvalidValue);
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const struct cudaKernelNodeParams* pNodeParams) {
  KernelWork work;
  if (cudaError_t error = kernelWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kKernel, std::move(work));
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const struct cudaMemcpy3DParms* pCopyParams) {
  CopyWork work;
  if (cudaError_t error = copyWork(pCopyParams, &work); error != cudaSuccess) return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, work);
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies, void* dst,
                                     const void* src, size_t count, enum cudaMemcpyKind kind) {
  CopyWork work;
  if (cudaError_t error = copyWork1D(dst, src, count, kind, &work); error != cudaSuccess)
    return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, work);
}

cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                           const void* symbol, const void* src, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind) {
  if (!copiesToSymbol(kind)) {
    return recordError(cudaErrorInvalidMemcpyDirection);
  }
  std::uint64_t address = 0;
  if (cudaError_t error = symbolRange(symbol, count, offset, &address); error != cudaSuccess) {
    return recordError(error);
  }
  CopyWork work;
  if (cudaError_t error = copyWork1D(reinterpret_cast<void*>(address), src, count, kind, &work);
      error != cudaSuccess) {
    return recordError(error);
  }
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, work);
}

cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                             void* dst, const void* symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind) {
  if (!copiesFromSymbol(kind)) {
    return recordError(cudaErrorInvalidMemcpyDirection);
  }
  std::uint64_t address = 0;
  if (cudaError_t error = symbolRange(symbol, count, offset, &address); error != cudaSuccess) {
    return recordError(error);
  }
  CopyWork work;
  if (cudaError_t error = copyWork1D(dst, reinterpret_cast<const void*>(address), count, kind, &work);
      error != cudaSuccess) {
    return recordError(error);
  }
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemcpy, work);
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                   const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                   const struct cudaMemsetParams* pMemsetParams) {
  FillWork work;
  if (cudaError_t error = fillWork(pMemsetParams, &work); error != cudaSuccess) return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kMemset, work);
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                 const struct cudaHostNodeParams* pNodeParams) {
  HostWork work;
  if (cudaError_t error = hostWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kHost, work);
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                  const cudaGraphNode_t* pDependencies, size_t numDependencies) {
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kEmpty, EmptyWork{});
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                        cudaEvent_t event) {
  if (cudaError_t error = liveEvent(event); error != cudaSuccess) return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kEventRecord,
                 EventWork{eventToken(event)});
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      cudaEvent_t event) {
  if (cudaError_t error = liveEvent(event); error != cudaSuccess) return recordError(error);
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kEventWait,
                 EventWork{eventToken(event)});
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
  ChildWork work;
  {
    std::lock_guard lock(graphMutex());
    Graph* child = graphOf(childGraph);
    if (!isLiveGraph(child) || child == graphOf(graph)) return recordError(cudaErrorInvalidValue);
    // The node's copy would allocate at the original's addresses (CUDA allows such a child only by
    // moving the graph into the node, which is not offered).
    if (child->hasMemoryNodes()) return recordError(cudaErrorNotSupported);
    work.graph = child->clone();  // the node's own copy, as CUDA makes
  }
  return addNode(pGraphNode, graph, pDependencies, numDependencies, NodeKind::kChildGraph, std::move(work));
}

cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int flags) {
  (void)flags;  // the detail is the same whatever they ask (graph_dot.h)
  return recordError(printGraphDot(graphOf(graph), path));
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kChildGraph, [&](Node& child) {
    *pGraph = handleOf(std::get<ChildWork>(child.work).graph.get());
    return cudaSuccess;
  });
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  std::lock_guard lock(graphMutex());
  Node* target = nodeOf(node);
  if (!isLiveNode(target)) return recordError(cudaErrorInvalidValue);
  // CUDA deletes no node of a graph with memory nodes.
  if (target->owner->hasMemoryNodes()) return recordError(cudaErrorNotSupported);
  target->owner->remove(target);
  return cudaSuccess;
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                     const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                     size_t numDependencies) {
  if (!defaultEdges(edgeData, numDependencies)) return recordError(cudaErrorNotSupported);
  std::vector<Node*> fromList, toList;
  if (dependencyList(from, numDependencies, &fromList) != cudaSuccess ||
      dependencyList(to, numDependencies, &toList) != cudaSuccess) {
    return recordError(cudaErrorInvalidValue);
  }
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target)) return recordError(cudaErrorInvalidValue);
  return recordError(target->addEdges(fromList, toList));
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                        const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                        size_t numDependencies) {
  if (!defaultEdges(edgeData, numDependencies)) return recordError(cudaErrorInvalidValue);
  std::vector<Node*> fromList, toList;
  if (dependencyList(from, numDependencies, &fromList) != cudaSuccess ||
      dependencyList(to, numDependencies, &toList) != cudaSuccess) {
    return recordError(cudaErrorInvalidValue);
  }
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target)) return recordError(cudaErrorInvalidValue);
  // CUDA deletes no edge of a graph with memory nodes.
  if (target->hasMemoryNodes()) return recordError(cudaErrorNotSupported);
  return recordError(target->removeEdges(fromList, toList));
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target)) return recordError(cudaErrorInvalidValue);
  std::vector<Node*> all;
  for (const auto& node : target->nodes()) all.push_back(node.get());
  writeNodes(all, nodes, numNodes);
  return cudaSuccess;
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes, size_t* pNumRootNodes) {
  if (pNumRootNodes == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target)) return recordError(cudaErrorInvalidValue);
  writeNodes(target->roots(), pRootNodes, pNumRootNodes);
  return cudaSuccess;
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edgeData, size_t* numEdges) {
  if (numEdges == nullptr || (from == nullptr) != (to == nullptr)) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target)) return recordError(cudaErrorInvalidValue);
  std::vector<Node*> fromList, toList;
  for (const auto& node : target->nodes()) {
    for (Node* dependency : node->dependencies) {
      fromList.push_back(dependency);
      toList.push_back(node.get());
    }
  }
  if (from == nullptr) {
    *numEdges = fromList.size();
    return cudaSuccess;
  }
  size_t capacity = *numEdges;
  writeNodes(fromList, from, &capacity);
  writeNodes(toList, to, numEdges);
  zeroEdges(edgeData, *numEdges);
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                         cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
  if (pNumDependencies == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Node* target = nodeOf(node);
  if (!isLiveNode(target)) return recordError(cudaErrorInvalidValue);
  writeNodes(target->dependencies, pDependencies, pNumDependencies);
  if (pDependencies != nullptr) zeroEdges(edgeData, *pNumDependencies);
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                           cudaGraphEdgeData* edgeData, size_t* pNumDependentNodes) {
  if (pNumDependentNodes == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Node* target = nodeOf(node);
  if (!isLiveNode(target)) return recordError(cudaErrorInvalidValue);
  writeNodes(target->dependents, pDependentNodes, pNumDependentNodes);
  if (pDependentNodes != nullptr) zeroEdges(edgeData, *pNumDependentNodes);
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* pType) {
  if (pType == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  Node* target = nodeOf(node);
  if (!isLiveNode(target)) return recordError(cudaErrorInvalidValue);
  *pType = static_cast<cudaGraphNodeType>(target->kind);
  return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kKernel, [&](Node& kernel) {
    *pNodeParams = kernelParams(std::get<KernelWork>(kernel.work));
    return cudaSuccess;
  });
}

// The node keeps its launch attributes (cudaGraphKernelNodeSetAttribute's), as natively.
cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                         const struct cudaKernelNodeParams* pNodeParams) {
  KernelWork work;
  if (cudaError_t error = kernelWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  return withNode(node, NodeKind::kKernel, [&](Node& kernel) {
    const KernelWork& old = std::get<KernelWork>(kernel.work);
    work.attributes = old.attributes;
    work.cooperative = old.cooperative;
    kernel.work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kMemcpy, [&](Node& copy) {
    *pNodeParams = copyParams(std::get<CopyWork>(copy.work));
    return cudaSuccess;
  });
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms* pNodeParams) {
  CopyWork work;
  const cudaError_t built = copyWork(pNodeParams, &work);
  return replaceNodeWork(node, NodeKind::kMemcpy, built, std::move(work));
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind) {
  CopyWork work;
  const cudaError_t built = copyWork1D(dst, src, count, kind, &work);
  return replaceNodeWork(node, NodeKind::kMemcpy, built, std::move(work));
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kMemset, [&](Node& fill) {
    *pNodeParams = fillParams(std::get<FillWork>(fill.work));
    return cudaSuccess;
  });
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const struct cudaMemsetParams* pNodeParams) {
  FillWork work;
  const cudaError_t built = fillWork(pNodeParams, &work);
  return replaceNodeWork(node, NodeKind::kMemset, built, std::move(work));
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kHost, [&](Node& host) {
    const auto& work = std::get<HostWork>(host.work);
    pNodeParams->fn = work.function;
    pNodeParams->userData = work.userData;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const struct cudaHostNodeParams* pNodeParams) {
  HostWork work;
  const cudaError_t built = hostWork(pNodeParams, &work);
  return replaceNodeWork(node, NodeKind::kHost, built, std::move(work));
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  if (event_out == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kEventRecord, [&](Node& record) {
    *event_out = reinterpret_cast<cudaEvent_t>(std::get<EventWork>(record.work).event);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return replaceNodeWork(node, NodeKind::kEventRecord, liveEvent(event), EventWork{eventToken(event)});
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  if (event_out == nullptr) return recordError(cudaErrorInvalidValue);
  return withNode(node, NodeKind::kEventWait, [&](Node& wait) {
    *event_out = reinterpret_cast<cudaEvent_t>(std::get<EventWork>(wait.work).event);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return replaceNodeWork(node, NodeKind::kEventWait, liveEvent(event), EventWork{eventToken(event)});
}

}  // extern "C"
