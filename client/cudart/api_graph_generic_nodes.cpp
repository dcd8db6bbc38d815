// The generic node-parameter form of CUDA graphs (cudart exports): cudaGraphAddNode,
// cudaGraphNodeSetParams and cudaGraphExecNodeSetParams take a cudaGraphNodeParams, a node type
// and a union of each type's parameters. Each call is the typed call of that node type
// (cudaGraphAddKernelNode, cudaGraphKernelNodeSetParams, cudaGraphExecKernelNodeSetParams, ...), so
// that every node, whichever form made it, is checked by one piece of code. The V2 parameter
// structures the union holds have the members of the typed calls' structures, in the same order.
//
// Conditional nodes have no typed call: they are client/session/graph_conditionals.h's. What the
// typed calls do not offer fails closed here too: external semaphores (cudaErrorNotSupported, said
// once), edge data other than plain dependencies (cudaErrorNotSupported, as cudaGraphAddDependencies
// answers).
#include <cuda_runtime_api.h>

#include <string>

#include "client/common/log.h"
#include "client/session/enum_bits.h"
#include "client/session/error_state.h"
#include "client/session/graph_api.h"
#include "cudart_api.gen.h"  // checks the definitions against the declarations

using namespace agileos::client;

namespace {

// The parameters' reserved members must be zero, as the runtime requires.
bool reservedClear(const cudaGraphNodeParams& params) {
  return params.reserved0[0] == 0 && params.reserved0[1] == 0 && params.reserved0[2] == 0 &&
         params.reserved2 == 0;
}

// Said once per call and node type.
cudaError_t notOffered(const char* call, cudaGraphNodeType type, const char* why) {
  const std::string key = std::string(call) + ":" + std::to_string(static_cast<int>(type));
  if (firstTime(key)) {
    AGILEOS_LOG_WARN(
        "%s: graph nodes of type %d are not supported by AgileOS (%s); returning cudaErrorNotSupported", call,
        static_cast<int>(type), why);
  }
  return recordError(cudaErrorNotSupported);
}

cudaKernelNodeParams kernelParams(const cudaKernelNodeParamsV2& v2) {
  cudaKernelNodeParams params{};
  params.func = v2.func;
  params.gridDim = v2.gridDim;
  params.blockDim = v2.blockDim;
  params.sharedMemBytes = v2.sharedMemBytes;
  params.kernelParams = v2.kernelParams;
  params.extra = v2.extra;
  return params;
}

cudaMemsetParams memsetParams(const cudaMemsetParamsV2& v2) {
  cudaMemsetParams params{};
  params.dst = v2.dst;
  params.pitch = v2.pitch;
  params.value = v2.value;
  params.elementSize = v2.elementSize;
  params.width = v2.width;
  params.height = v2.height;
  return params;
}

cudaHostNodeParams hostParams(const cudaHostNodeParamsV2& v2) {
  return cudaHostNodeParams{v2.fn, v2.userData};
}

cudaMemAllocNodeParams allocationParams(const cudaMemAllocNodeParamsV2& v2) {
  cudaMemAllocNodeParams params{};
  params.poolProps = v2.poolProps;
  params.accessDescs = v2.accessDescs;
  params.accessDescCount = v2.accessDescCount;
  params.bytesize = v2.bytesize;
  params.dptr = v2.dptr;
  return params;
}

// A copy node's flags and reserved members must be zero.
bool plainCopy(const cudaMemcpyNodeParams& copy) {
  return copy.flags == 0 && copy.reserved[0] == 0 && copy.reserved[1] == 0 && copy.reserved[2] == 0;
}

}  // namespace

extern "C" {

cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                             const cudaGraphNode_t* pDependencies, const cudaGraphEdgeData* dependencyData,
                             size_t numDependencies, struct cudaGraphNodeParams* nodeParams) {
  if (nodeParams == nullptr || !reservedClear(*nodeParams)) return recordError(cudaErrorInvalidValue);
  if (!graph_api::plainEdges(dependencyData, numDependencies)) return recordError(cudaErrorNotSupported);
  const cudaGraphNode_t* deps = pDependencies;
  const size_t count = numDependencies;
  switch (nodeParams->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams params = kernelParams(nodeParams->kernel);
      return cudaGraphAddKernelNode(pGraphNode, graph, deps, count, &params);
    }
    case cudaGraphNodeTypeMemcpy:
      if (!plainCopy(nodeParams->memcpy)) return recordError(cudaErrorInvalidValue);
      return cudaGraphAddMemcpyNode(pGraphNode, graph, deps, count, &nodeParams->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams params = memsetParams(nodeParams->memset);
      return cudaGraphAddMemsetNode(pGraphNode, graph, deps, count, &params);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams params = hostParams(nodeParams->host);
      return cudaGraphAddHostNode(pGraphNode, graph, deps, count, &params);
    }
    case cudaGraphNodeTypeGraph:
      // Moving the child graph into the node is not offered (as cudaGraphAddChildGraphNode, which
      // clones, refuses a child with memory nodes).
      if (nodeParams->graph.ownership != cudaGraphChildGraphOwnershipClone)
        return recordError(cudaErrorNotSupported);
      return cudaGraphAddChildGraphNode(pGraphNode, graph, deps, count, nodeParams->graph.graph);
    case cudaGraphNodeTypeEmpty:
      return cudaGraphAddEmptyNode(pGraphNode, graph, deps, count);
    case cudaGraphNodeTypeWaitEvent:
      return cudaGraphAddEventWaitNode(pGraphNode, graph, deps, count, nodeParams->eventWait.event);
    case cudaGraphNodeTypeEventRecord:
      return cudaGraphAddEventRecordNode(pGraphNode, graph, deps, count, nodeParams->eventRecord.event);
    case cudaGraphNodeTypeMemAlloc: {
      cudaMemAllocNodeParams params = allocationParams(nodeParams->alloc);
      const cudaError_t result = cudaGraphAddMemAllocNode(pGraphNode, graph, deps, count, &params);
      if (result == cudaSuccess) nodeParams->alloc.dptr = params.dptr;  // out: the allocation's address
      return result;
    }
    case cudaGraphNodeTypeMemFree:
      return cudaGraphAddMemFreeNode(pGraphNode, graph, deps, count, nodeParams->free.dptr);
    case cudaGraphNodeTypeConditional: {
      const int type = enumBits(nodeParams->conditional.type);  // any bit pattern may come
      return recordError(
          graph_api::addConditionalNode(pGraphNode, graph, deps, count, nodeParams->conditional.handle, type,
                                        nodeParams->conditional.size, &nodeParams->conditional.phGraph_out));
    }
    case cudaGraphNodeTypeExtSemaphoreSignal:
    case cudaGraphNodeTypeExtSemaphoreWait:
      return notOffered("cudaGraphAddNode", nodeParams->type, "external semaphores are not offered");
    default:
      return recordError(cudaErrorInvalidValue);
  }
}

// The node keeps its type: parameters of another type are cudaErrorInvalidValue. Types whose
// parameters cannot change after the node is made (child graphs, empty, memory nodes) are
// cudaErrorInvalidValue too, as the runtime answers.
cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, struct cudaGraphNodeParams* nodeParams) {
  if (nodeParams == nullptr || !reservedClear(*nodeParams)) return recordError(cudaErrorInvalidValue);
  cudaGraphNodeType type{};
  if (cudaError_t error = cudaGraphNodeGetType(node, &type); error != cudaSuccess) return error;
  if (type != nodeParams->type) return recordError(cudaErrorInvalidValue);
  switch (type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams params = kernelParams(nodeParams->kernel);
      return cudaGraphKernelNodeSetParams(node, &params);
    }
    case cudaGraphNodeTypeMemcpy:
      if (!plainCopy(nodeParams->memcpy)) return recordError(cudaErrorInvalidValue);
      return cudaGraphMemcpyNodeSetParams(node, &nodeParams->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams params = memsetParams(nodeParams->memset);
      return cudaGraphMemsetNodeSetParams(node, &params);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams params = hostParams(nodeParams->host);
      return cudaGraphHostNodeSetParams(node, &params);
    }
    case cudaGraphNodeTypeWaitEvent:
      return cudaGraphEventWaitNodeSetEvent(node, nodeParams->eventWait.event);
    case cudaGraphNodeTypeEventRecord:
      return cudaGraphEventRecordNodeSetEvent(node, nodeParams->eventRecord.event);
    default:
      return recordError(cudaErrorInvalidValue);
  }
}

cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                       struct cudaGraphNodeParams* nodeParams) {
  if (nodeParams == nullptr || !reservedClear(*nodeParams)) return recordError(cudaErrorInvalidValue);
  cudaGraphNodeType type{};
  if (cudaError_t error = cudaGraphNodeGetType(node, &type); error != cudaSuccess) return error;
  if (type != nodeParams->type) return recordError(cudaErrorInvalidValue);
  switch (type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams params = kernelParams(nodeParams->kernel);
      return cudaGraphExecKernelNodeSetParams(graphExec, node, &params);
    }
    case cudaGraphNodeTypeMemcpy:
      if (!plainCopy(nodeParams->memcpy)) return recordError(cudaErrorInvalidValue);
      return cudaGraphExecMemcpyNodeSetParams(graphExec, node, &nodeParams->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams params = memsetParams(nodeParams->memset);
      return cudaGraphExecMemsetNodeSetParams(graphExec, node, &params);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams params = hostParams(nodeParams->host);
      return cudaGraphExecHostNodeSetParams(graphExec, node, &params);
    }
    case cudaGraphNodeTypeWaitEvent:
      return cudaGraphExecEventWaitNodeSetEvent(graphExec, node, nodeParams->eventWait.event);
    case cudaGraphNodeTypeEventRecord:
      return cudaGraphExecEventRecordNodeSetEvent(graphExec, node, nodeParams->eventRecord.event);
    case cudaGraphNodeTypeGraph:
      // Child graphs are inlined when a graph is instantiated (cudaGraphExecChildGraphNodeSetParams).
      return notOffered("cudaGraphExecNodeSetParams", type,
                        "child graphs are inlined when a graph is instantiated");
    default:
      return recordError(cudaErrorInvalidValue);
  }
}

}  // extern "C"
