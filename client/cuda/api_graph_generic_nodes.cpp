// The generic node-parameter form of CUDA graphs through the driver API (libcuda.so.1 exports):
// cuGraphAddNode, cuGraphNodeSetParams and cuGraphExecNodeSetParams take a CUgraphNodeParams, a node
// type and a union of each type's parameters. Each call is the typed driver call of that node
// type, as the runtime shim's cudaGraphAddNode is its typed calls, so that every node is checked by
// one piece of code. The union's V2/V3 structures have the typed structures' members, in the same
// order, and the typed structures' context member where those have one.
//
// Conditional nodes have no typed call: they are client/session/graph_conditionals.h's. What the
// typed calls do not offer fails closed here too: external semaphores, batch memory operations
// (CUDA_ERROR_NOT_SUPPORTED, said once), a child graph moved into its node, and edge data other than
// plain dependencies.
#include <cuda.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "client/common/log.h"
#include "client/cuda/driver_call.h"
#include "client/cuda/graph_node_params.h"
#include "client/session/graph_api.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

// The parameters' reserved members must be zero, as the driver requires.
bool reservedClear(const CUgraphNodeParams& params) {
  return params.reserved0[0] == 0 && params.reserved0[1] == 0 && params.reserved0[2] == 0 &&
         params.reserved2 == 0;
}

bool plainEdges(const CUgraphEdgeData* edgeData, size_t count) {
  return graph_api::plainEdges(reinterpret_cast<const cudaGraphEdgeData*>(edgeData), count);
}

// The node type read as an integer: any bit pattern may come.
int typeOf(const CUgraphNodeParams& params) {
  int type = 0;
  static_assert(sizeof type == sizeof params.type);
  std::memcpy(&type, &params.type, sizeof type);
  return type;
}

// Said once per call and node type.
CUresult notOffered(const char* call, int type, const char* why) {
  const std::string key = std::string(call) + ":" + std::to_string(type);
  if (firstTime(key)) {
    AGILEOS_LOG_WARN(
        "%s: graph nodes of type %d are not supported by AgileOS (%s); returning CUDA_ERROR_NOT_SUPPORTED",
        call, type, why);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult notOfferedType(const char* call, int type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return notOffered(call, type, "external semaphores are not offered");
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return notOffered(call, type, "stream memory operations are not offered");
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUDA_KERNEL_NODE_PARAMS kernelParams(const CUDA_KERNEL_NODE_PARAMS_v3& v3) {
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = v3.func;
  params.gridDimX = v3.gridDimX;
  params.gridDimY = v3.gridDimY;
  params.gridDimZ = v3.gridDimZ;
  params.blockDimX = v3.blockDimX;
  params.blockDimY = v3.blockDimY;
  params.blockDimZ = v3.blockDimZ;
  params.sharedMemBytes = v3.sharedMemBytes;
  params.kernelParams = v3.kernelParams;
  params.extra = v3.extra;
  params.kern = v3.kern;
  params.ctx = v3.ctx;
  return params;
}

CUDA_MEMSET_NODE_PARAMS memsetParams(const CUDA_MEMSET_NODE_PARAMS_v2& v2) {
  CUDA_MEMSET_NODE_PARAMS params{};
  params.dst = v2.dst;
  params.pitch = v2.pitch;
  params.value = v2.value;
  params.elementSize = v2.elementSize;
  params.width = v2.width;
  params.height = v2.height;
  return params;
}

CUDA_HOST_NODE_PARAMS hostParams(const CUDA_HOST_NODE_PARAMS_v2& v2) {
  CUDA_HOST_NODE_PARAMS params{};
  params.fn = v2.fn;
  params.userData = v2.userData;
  return params;
}

CUDA_MEM_ALLOC_NODE_PARAMS allocationParams(const CUDA_MEM_ALLOC_NODE_PARAMS_v2& v2) {
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps = v2.poolProps;
  params.accessDescs = v2.accessDescs;
  params.accessDescCount = v2.accessDescCount;
  params.bytesize = v2.bytesize;
  params.dptr = v2.dptr;
  return params;
}

// A copy node's flags and reserved member must be zero.
bool plainCopy(const CUDA_MEMCPY_NODE_PARAMS& copy) { return copy.flags == 0 && copy.reserved == 0; }

// The node's type, which parameters for it must name.
CUresult sameType(CUgraphNode node, const CUgraphNodeParams& params) {
  CUgraphNodeType type{};
  if (CUresult result = cuGraphNodeGetType(node, &type); result != CUDA_SUCCESS) return result;
  return static_cast<int>(type) == typeOf(params) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult addNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* edgeData,
                 size_t count, CUgraphNodeParams* params) {
  if (params == nullptr || !reservedClear(*params)) return CUDA_ERROR_INVALID_VALUE;
  if (!plainEdges(edgeData, count)) return CUDA_ERROR_NOT_SUPPORTED;
  const int type = typeOf(*params);
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS kernel = kernelParams(params->kernel);
      return cuGraphAddKernelNode_v2(node, graph, deps, count, &kernel);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (!plainCopy(params->memcpy)) return CUDA_ERROR_INVALID_VALUE;
      return cuGraphAddMemcpyNode(node, graph, deps, count, &params->memcpy.copyParams,
                                  params->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS memset = memsetParams(params->memset);
      return cuGraphAddMemsetNode(node, graph, deps, count, &memset, params->memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      const CUDA_HOST_NODE_PARAMS host = hostParams(params->host);
      return cuGraphAddHostNode(node, graph, deps, count, &host);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
      // Moving the child graph into the node is not offered (as cuGraphAddChildGraphNode, which
      // clones, refuses a child with memory nodes).
      if (params->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) return CUDA_ERROR_NOT_SUPPORTED;
      return cuGraphAddChildGraphNode(node, graph, deps, count, params->graph.graph);
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return cuGraphAddEmptyNode(node, graph, deps, count);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return cuGraphAddEventWaitNode(node, graph, deps, count, params->eventWait.event);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return cuGraphAddEventRecordNode(node, graph, deps, count, params->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS allocation = allocationParams(params->alloc);
      const CUresult result = cuGraphAddMemAllocNode(node, graph, deps, count, &allocation);
      if (result == CUDA_SUCCESS) params->alloc.dptr = allocation.dptr;  // out: the allocation's address
      return result;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return cuGraphAddMemFreeNode(node, graph, deps, count, params->free.dptr);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
      if (cudaError_t error = nodeContext(params->conditional.ctx); error != cudaSuccess)
        return toDriverResult(error);
      int conditionType = 0;  // any bit pattern may come: read as an integer
      static_assert(sizeof conditionType == sizeof params->conditional.type);
      std::memcpy(&conditionType, &params->conditional.type, sizeof conditionType);
      static_assert(std::is_same_v<CUgraph, cudaGraph_t>);
      return toDriverResult(
          graph_api::addConditionalNode(node, graph, deps, count, params->conditional.handle, conditionType,
                                        params->conditional.size, &params->conditional.phGraph_out));
    }
    default:
      return notOfferedType("cuGraphAddNode", type);
  }
}

}  // namespace

extern "C" {

CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return addNode(phGraphNode, hGraph, dependencies, nullptr, numDependencies, nodeParams);
}

CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                           const CUgraphEdgeData* dependencyData, size_t numDependencies,
                           CUgraphNodeParams* nodeParams) {
  return addNode(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

// The node keeps its type: parameters of another type are CUDA_ERROR_INVALID_VALUE. Types whose
// parameters cannot change after the node is made (child graphs, empty, memory nodes) are
// CUDA_ERROR_INVALID_VALUE too.
CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  if (nodeParams == nullptr || !reservedClear(*nodeParams)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = sameType(hNode, *nodeParams); result != CUDA_SUCCESS) return result;
  switch (typeOf(*nodeParams)) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS kernel = kernelParams(nodeParams->kernel);
      return cuGraphKernelNodeSetParams_v2(hNode, &kernel);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (!plainCopy(nodeParams->memcpy)) return CUDA_ERROR_INVALID_VALUE;
      return cuGraphMemcpyNodeSetParams(hNode, &nodeParams->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS memset = memsetParams(nodeParams->memset);
      return cuGraphMemsetNodeSetParams(hNode, &memset);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      const CUDA_HOST_NODE_PARAMS host = hostParams(nodeParams->host);
      return cuGraphHostNodeSetParams(hNode, &host);
    }
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return cuGraphEventWaitNodeSetEvent(hNode, nodeParams->eventWait.event);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return cuGraphEventRecordNodeSetEvent(hNode, nodeParams->eventRecord.event);
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  if (nodeParams == nullptr || !reservedClear(*nodeParams)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = sameType(hNode, *nodeParams); result != CUDA_SUCCESS) return result;
  const int type = typeOf(*nodeParams);
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS kernel = kernelParams(nodeParams->kernel);
      return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &kernel);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (!plainCopy(nodeParams->memcpy)) return CUDA_ERROR_INVALID_VALUE;
      return cuGraphExecMemcpyNodeSetParams(hGraphExec, hNode, &nodeParams->memcpy.copyParams,
                                            nodeParams->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS memset = memsetParams(nodeParams->memset);
      return cuGraphExecMemsetNodeSetParams(hGraphExec, hNode, &memset, nodeParams->memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      const CUDA_HOST_NODE_PARAMS host = hostParams(nodeParams->host);
      return cuGraphExecHostNodeSetParams(hGraphExec, hNode, &host);
    }
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return cuGraphExecEventWaitNodeSetEvent(hGraphExec, hNode, nodeParams->eventWait.event);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return cuGraphExecEventRecordNodeSetEvent(hGraphExec, hNode, nodeParams->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      // Child graphs are inlined when a graph is instantiated (cuGraphExecChildGraphNodeSetParams).
      return notOffered("cuGraphExecNodeSetParams", type,
                        "child graphs are inlined when a graph is instantiated");
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // extern "C"
