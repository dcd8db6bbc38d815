// CUDA graph memory nodes through the driver API (libcuda.so.1 exports): allocation and free
// nodes, their parameters and the device's graph memory attributes, on the session's graphs
// (client/session/graph_memory.h), which the runtime shim's cudaGraphAddMem*Node calls share.
#include <cuda.h>

#include <cstring>
#include <vector>

#include "client/cuda/driver_call.h"
#include "client/session/graph_memory.h"
#include "client/session/graph_memory_nodes.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

Graph* graphOf(CUgraph graph) { return reinterpret_cast<Graph*>(graph); }
Node* nodeOf(CUgraphNode node) { return reinterpret_cast<Node*>(node); }

cudaError_t dependencyList(const CUgraphNode* dependencies, size_t count, std::vector<Node*>* out) {
  if (count > 0 && dependencies == nullptr) return cudaErrorInvalidValue;
  for (size_t i = 0; i < count; ++i) out->push_back(nodeOf(dependencies[i]));
  return cudaSuccess;
}

// The driver's attribute numbers are the runtime's (CUgraphMem_attribute, cudaGraphMemAttributeType);
// any bit pattern may come, so it is read as an integer.
cudaGraphMemAttributeType runtimeAttribute(CUgraphMem_attribute attribute) {
  int value = 0;
  static_assert(sizeof value == sizeof attribute);
  std::memcpy(&value, &attribute, sizeof value);
  return static_cast<cudaGraphMemAttributeType>(value);
}
static_assert(int(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == int(cudaGraphMemAttrUsedMemCurrent) &&
              int(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == int(cudaGraphMemAttrUsedMemHigh) &&
              int(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == int(cudaGraphMemAttrReservedMemCurrent) &&
              int(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == int(cudaGraphMemAttrReservedMemHigh));
static_assert(sizeof(CUmemPoolProps) == sizeof(cudaMemPoolProps) &&
              sizeof(CUmemAccessDesc) == sizeof(cudaMemAccessDesc));

}  // namespace

extern "C" {

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  if (phGraphNode == nullptr || nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  // The driver's structures have the runtime's layout (the runtime passes them through).
  cudaMemPoolProps props;
  std::memcpy(&props, &nodeParams->poolProps, sizeof props);
  if (cudaError_t error =
          checkAllocationNodeProps(props, reinterpret_cast<const cudaMemAccessDesc*>(nodeParams->accessDescs),
                                   nodeParams->accessDescCount);
      error != cudaSuccess) {
    return toDriverResult(error);
  }
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, numDependencies, &list); error != cudaSuccess)
    return toDriverResult(error);
  Node* node = nullptr;
  std::uint64_t address = 0;
  if (cudaError_t error =
          addAllocationNode(graphOf(hGraph), list, nodeParams->bytesize, props.location.id, &node, &address);
      error != cudaSuccess) {
    return toDriverResult(error);
  }
  nodeParams->dptr = address;
  *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                               size_t numDependencies, CUdeviceptr dptr) {
  if (phGraphNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, numDependencies, &list); error != cudaSuccess)
    return toDriverResult(error);
  Node* node = nullptr;
  if (cudaError_t error = addFreeNode(graphOf(hGraph), list, dptr, &node); error != cudaSuccess)
    return toDriverResult(error);
  *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  if (params_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t bytes = 0, address = 0;
  int device = 0;
  if (cudaError_t error = allocationNodeParams(nodeOf(hNode), &bytes, &device, &address);
      error != cudaSuccess)
    return toDriverResult(error);
  *params_out = CUDA_MEM_ALLOC_NODE_PARAMS{};
  params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params_out->poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params_out->poolProps.location.id = device;
  params_out->bytesize = bytes;
  params_out->dptr = address;
  return CUDA_SUCCESS;
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  if (dptr_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t address = 0;
  if (cudaError_t error = freeNodeAddress(nodeOf(hNode), &address); error != cudaSuccess)
    return toDriverResult(error);
  *dptr_out = address;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireDevice(device); result != CUDA_SUCCESS) return result;
  return toDriverResult(graphMemoryTrim());
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireDevice(device); result != CUDA_SUCCESS) return result;
  return toDriverResult(graphMemoryAttribute(runtimeAttribute(attr), value));
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireDevice(device); result != CUDA_SUCCESS) return result;
  return toDriverResult(setGraphMemoryAttribute(runtimeAttribute(attr), value));
}

}  // extern "C"
