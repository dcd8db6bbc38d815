// CUDA graph memory nodes (cudart exports): allocation and free nodes, their parameters, and the
// device's graph memory attributes. The allocations are reservations the worker makes when a node
// is added (client/session/graph_memory.h says how they become live at a launch).
#include <cuda_runtime_api.h>

#include <vector>

#include "client/session/error_state.h"
#include "client/session/graph_memory.h"
#include "client/session/graph_memory_nodes.h"
#include "client/session/graph_node_params.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
using namespace agileos::client::graph_api;

extern "C" {

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                     struct cudaMemAllocNodeParams* nodeParams) {
  if (pGraphNode == nullptr || nodeParams == nullptr) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = checkAllocationNodeProps(nodeParams->poolProps, nodeParams->accessDescs,
                                                   nodeParams->accessDescCount);
      error != cudaSuccess) {
    return recordError(error);
  }
  std::vector<Node*> dependencies;
  if (cudaError_t error = dependencyList(pDependencies, numDependencies, &dependencies); error != cudaSuccess)
    return recordError(error);
  Node* node = nullptr;
  std::uint64_t address = 0;
  if (cudaError_t error = addAllocationNode(graphOf(graph), dependencies, nodeParams->bytesize,
                                            nodeParams->poolProps.location.id, &node, &address);
      error != cudaSuccess) {
    return recordError(error);
  }
  nodeParams->dptr = reinterpret_cast<void*>(address);
  *pGraphNode = handleOf(node);
  return cudaSuccess;
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                    const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                    void* dptr) {
  if (pGraphNode == nullptr) return recordError(cudaErrorInvalidValue);
  std::vector<Node*> dependencies;
  if (cudaError_t error = dependencyList(pDependencies, numDependencies, &dependencies); error != cudaSuccess)
    return recordError(error);
  Node* node = nullptr;
  if (cudaError_t error =
          addFreeNode(graphOf(graph), dependencies, reinterpret_cast<std::uint64_t>(dptr), &node);
      error != cudaSuccess) {
    return recordError(error);
  }
  *pGraphNode = handleOf(node);
  return cudaSuccess;
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, struct cudaMemAllocNodeParams* params_out) {
  if (params_out == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t bytes = 0, address = 0;
  int device = 0;
  if (cudaError_t error = allocationNodeParams(nodeOf(node), &bytes, &device, &address); error != cudaSuccess)
    return recordError(error);
  *params_out = cudaMemAllocNodeParams{};
  params_out->poolProps.allocType = cudaMemAllocationTypePinned;
  params_out->poolProps.handleTypes = cudaMemHandleTypeNone;
  params_out->poolProps.location.type = cudaMemLocationTypeDevice;
  params_out->poolProps.location.id = device;
  params_out->bytesize = bytes;
  params_out->dptr = reinterpret_cast<void*>(address);
  return cudaSuccess;
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  if (dptr_out == nullptr) return recordError(cudaErrorInvalidValue);
  std::uint64_t address = 0;
  if (cudaError_t error = freeNodeAddress(nodeOf(node), &address); error != cudaSuccess)
    return recordError(error);
  *static_cast<void**>(dptr_out) = reinterpret_cast<void*>(address);
  return cudaSuccess;
}

cudaError_t cudaDeviceGraphMemTrim(int device) {
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return recordError(error);
  return recordError(graphMemoryTrim());
}

cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void* value) {
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return recordError(error);
  return recordError(graphMemoryAttribute(attr, value));
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void* value) {
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return recordError(error);
  return recordError(setGraphMemoryAttribute(attr, value));
}

}  // extern "C"
