// Building CUDA graphs node by node through the driver API (libcuda.so.1 exports): the nodes, their
// parameters and the edges. A statically linked runtime builds its cudaGraphAdd*Node calls on
// these. Each converts the driver's structures to the runtime's (graph_node_params.h) and makes
// the call the runtime shim makes (client/session/graph_api.h), so a node is checked by the same
// code whichever API made it, and a graph built here is launched and validated like any other.
#include <cuda.h>

#include <cstring>
#include <type_traits>
#include <variant>

#include "client/cuda/driver_call.h"
#include "client/cuda/graph_node_params.h"
#include "client/session/graph_api.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;
namespace api = agileos::client::graph_api;

namespace {

// The handles are the runtime's types (struct CUgraph_st* and so on).
static_assert(std::is_same_v<CUgraph, cudaGraph_t> && std::is_same_v<CUgraphNode, cudaGraphNode_t> &&
              std::is_same_v<CUgraphExec, cudaGraphExec_t> && std::is_same_v<CUevent, cudaEvent_t>);
static_assert(sizeof(CUgraphEdgeData) == sizeof(cudaGraphEdgeData) &&
              sizeof(CUkernelNodeAttrValue) == sizeof(cudaKernelNodeAttrValue));

const cudaGraphEdgeData* edgesOf(const CUgraphEdgeData* edges) {
  return reinterpret_cast<const cudaGraphEdgeData*>(edges);
}
cudaGraphEdgeData* edgesOf(CUgraphEdgeData* edges) { return reinterpret_cast<cudaGraphEdgeData*>(edges); }

CUresult driver(cudaError_t error) { return toDriverResult(error); }

CUresult addKernel(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                   cudaError_t converted, const cudaKernelNodeParams& params) {
  if (converted != cudaSuccess) return driver(converted);
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return driver(api::addKernelNode(node, graph, dependencies, count, &params));
}

template <typename Params>
CUresult kernelGetParams(CUgraphNode node, Params* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaKernelNodeParams params{};
  if (cudaError_t error = api::kernelNodeParams(node, &params); error != cudaSuccess) return driver(error);
  driverKernelParams(params, out);
  return CUDA_SUCCESS;
}

CUresult kernelSetParams(CUgraphNode node, cudaError_t converted, const cudaKernelNodeParams& params) {
  if (converted != cudaSuccess) return driver(converted);
  return driver(api::setKernelNodeParams(node, &params));
}

// A node's parameters in the driver's structure: `convert` makes it from a copy of the node's work.
template <typename Work, typename Out, typename Convert>
CUresult readParams(CUgraphNode node, NodeKind kind, Out* out, Convert convert) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  NodeWork work;
  if (cudaError_t error = api::nodeWork(node, kind, &work); error != cudaSuccess) return driver(error);
  *out = convert(std::get<Work>(work));
  return CUDA_SUCCESS;
}

// The attribute id read as an integer: any bit pattern may come.
cudaKernelNodeAttrID runtimeAttribute(CUkernelNodeAttrID attr) {
  int value = 0;
  static_assert(sizeof value == sizeof attr);
  std::memcpy(&value, &attr, sizeof value);
  return static_cast<cudaKernelNodeAttrID>(value);
}

}  // namespace

extern "C" {

CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  return driver(api::cloneGraph(phGraphClone, originalGraph));
}

CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
  return driver(api::findInClone(phNode, hOriginalNode, hClonedGraph));
}

CUresult cuGraphDestroyNode(CUgraphNode hNode) { return driver(api::destroyNode(hNode)); }

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  return driver(api::getRootNodes(hGraph, rootNodes, numRootNodes));
}

CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  return driver(api::getEdges(hGraph, from, to, nullptr, numEdges));
}
CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                            size_t* numEdges) {
  return driver(api::getEdges(hGraph, from, to, edgesOf(edgeData), numEdges));
}

CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies, size_t* numDependencies) {
  return driver(api::getDependencies(hNode, dependencies, nullptr, numDependencies));
}
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies,
                                       CUgraphEdgeData* edgeData, size_t* numDependencies) {
  return driver(api::getDependencies(hNode, dependencies, edgesOf(edgeData), numDependencies));
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                      size_t* numDependentNodes) {
  return driver(api::getDependents(hNode, dependentNodes, nullptr, numDependentNodes));
}
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                         CUgraphEdgeData* edgeData, size_t* numDependentNodes) {
  return driver(api::getDependents(hNode, dependentNodes, edgesOf(edgeData), numDependentNodes));
}

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                size_t numDependencies) {
  return driver(api::addDependencies(hGraph, from, to, nullptr, numDependencies));
}
CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData* edgeData, size_t numDependencies) {
  return driver(api::addDependencies(hGraph, from, to, edgesOf(edgeData), numDependencies));
}

CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   size_t numDependencies) {
  return driver(api::removeDependencies(hGraph, from, to, nullptr, numDependencies));
}
CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                      const CUgraphEdgeData* edgeData, size_t numDependencies) {
  return driver(api::removeDependencies(hGraph, from, to, edgesOf(edgeData), numDependencies));
}

// --- kernel nodes ---

CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  cudaKernelNodeParams params{};
  const cudaError_t converted = runtimeKernelParams(nodeParams, &params);
  return addKernel(phGraphNode, hGraph, dependencies, numDependencies, converted, params);
}
CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  cudaKernelNodeParams params{};
  const cudaError_t converted = runtimeKernelParams(nodeParams, &params);
  return addKernel(phGraphNode, hGraph, dependencies, numDependencies, converted, params);
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return kernelGetParams(hNode, nodeParams);
}
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return kernelGetParams(hNode, nodeParams);
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  cudaKernelNodeParams params{};
  const cudaError_t converted = runtimeKernelParams(nodeParams, &params);
  return kernelSetParams(hNode, converted, params);
}
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  cudaKernelNodeParams params{};
  const cudaError_t converted = runtimeKernelParams(nodeParams, &params);
  return kernelSetParams(hNode, converted, params);
}

CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                       const CUkernelNodeAttrValue* value) {
  return driver(api::setKernelNodeAttribute(hNode, runtimeAttribute(attr),
                                            reinterpret_cast<const cudaKernelNodeAttrValue*>(value)));
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                       CUkernelNodeAttrValue* value_out) {
  return driver(api::kernelNodeAttribute(hNode, runtimeAttribute(attr),
                                         reinterpret_cast<cudaKernelNodeAttrValue*>(value_out)));
}

CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  return driver(api::copyKernelNodeAttributes(dst, src));
}

// --- copy, memset and host nodes ---

CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  CopyWork work;
  const cudaError_t built = copyNodeWork(copyParams, ctx, &work);
  return driver(
      api::addNode(phGraphNode, hGraph, dependencies, numDependencies, NodeKind::kMemcpy, built, work));
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  return readParams<CopyWork>(hNode, NodeKind::kMemcpy, nodeParams, driverCopyParams);
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  CopyWork work;
  const cudaError_t built = copyNodeWork(nodeParams, nullptr, &work);
  return driver(api::setNodeWork(hNode, NodeKind::kMemcpy, built, work));
}

CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams,
                              CUcontext ctx) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  FillWork work;
  const cudaError_t built = fillNodeWork(memsetParams, ctx, &work);
  return driver(
      api::addNode(phGraphNode, hGraph, dependencies, numDependencies, NodeKind::kMemset, built, work));
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return readParams<FillWork>(hNode, NodeKind::kMemset, nodeParams, driverMemsetParams);
}

CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  FillWork work;
  const cudaError_t built = fillNodeWork(nodeParams, nullptr, &work);
  return driver(api::setNodeWork(hNode, NodeKind::kMemset, built, work));
}

CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                            size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  HostWork work;
  const cudaError_t built = hostNodeWork(nodeParams, &work);
  return driver(
      api::addNode(phGraphNode, hGraph, dependencies, numDependencies, NodeKind::kHost, built, work));
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  return readParams<HostWork>(hNode, NodeKind::kHost, nodeParams, driverHostParams);
}

CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  HostWork work;
  const cudaError_t built = hostNodeWork(nodeParams, &work);
  return driver(api::setNodeWork(hNode, NodeKind::kHost, built, work));
}

// --- empty, event and child graph nodes ---

CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                             size_t numDependencies) {
  return driver(api::addNode(phGraphNode, hGraph, dependencies, numDependencies, NodeKind::kEmpty,
                             cudaSuccess, EmptyWork{}));
}

CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                   size_t numDependencies, CUevent event) {
  return driver(
      api::addEventNode(phGraphNode, hGraph, dependencies, numDependencies, NodeKind::kEventRecord, event));
}
CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return driver(api::eventNodeEvent(hNode, NodeKind::kEventRecord, event_out));
}
CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return driver(api::setEventNodeEvent(hNode, NodeKind::kEventRecord, event));
}

CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, CUevent event) {
  return driver(
      api::addEventNode(phGraphNode, hGraph, dependencies, numDependencies, NodeKind::kEventWait, event));
}
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return driver(api::eventNodeEvent(hNode, NodeKind::kEventWait, event_out));
}
CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return driver(api::setEventNodeEvent(hNode, NodeKind::kEventWait, event));
}

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph, CUcontext ctx,
                                        unsigned int defaultLaunchValue, unsigned int flags) {
  if (cudaError_t error = nodeContext(ctx); error != cudaSuccess) return driver(error);
  if (pHandle_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  cudaGraphConditionalHandle handle = 0;  // the same 64 bits as CUgraphConditionalHandle
  if (cudaError_t error = api::createConditionalHandle(&handle, hGraph, defaultLaunchValue, flags);
      error != cudaSuccess)
    return driver(error);
  *pHandle_out = handle;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                  size_t numDependencies, CUgraph childGraph) {
  return driver(api::addChildGraphNode(phGraphNode, hGraph, dependencies, numDependencies, childGraph));
}
CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  return driver(api::childGraphOf(hNode, phGraph));
}

}  // extern "C"
