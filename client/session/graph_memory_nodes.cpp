#include "client/session/graph_memory_nodes.h"

#include <mutex>

#include "client/session/worker_calls.h"

namespace agileos::client {

cudaError_t checkAllocationNodeProps(const cudaMemPoolProps& props, const cudaMemAccessDesc* accessDescs,
                                     std::size_t accessDescCount) {
  if (props.allocType != cudaMemAllocationTypePinned || props.handleTypes != cudaMemHandleTypeNone ||
      props.location.type != cudaMemLocationTypeDevice) {
    return cudaErrorInvalidValue;
  }
  if (cudaError_t error = checkDeviceOrdinal(props.location.id); error != cudaSuccess) return error;
  if (accessDescCount > 0 && accessDescs == nullptr) return cudaErrorInvalidValue;
  for (std::size_t i = 0; i < accessDescCount; ++i) {
    const cudaMemAccessDesc& desc = accessDescs[i];
    if (desc.location.type != cudaMemLocationTypeDevice || desc.location.id != props.location.id ||
        desc.flags != cudaMemAccessFlagsProtReadWrite) {
      return cudaErrorInvalidValue;
    }
  }
  return cudaSuccess;
}

cudaError_t addAllocationNode(Graph* graph, std::span<Node* const> dependencies, std::uint64_t bytes,
                              int device, Node** node, std::uint64_t* address) {
  if (node == nullptr || address == nullptr || bytes == 0) return cudaErrorInvalidValue;
  std::lock_guard lock(graphMutex());
  if (!isLiveGraph(graph) || graph->isChild()) return cudaErrorInvalidValue;
  AllocWork work;
  work.bytes = bytes;
  work.device = device;
  if (cudaError_t error = addGraphAllocation(*graph, dependencies, bytes, &work.allocation);
      error != cudaSuccess)
    return error;
  const std::uint64_t base = work.allocation->base();
  // The dependencies were checked by addGraphAllocation: this cannot fail; if it did, the work and
  // with it a new reservation would go.
  if (cudaError_t error = graph->add(NodeKind::kMemAlloc, std::move(work), dependencies, node);
      error != cudaSuccess)
    return error;
  *address = base;
  return cudaSuccess;
}

cudaError_t addFreeNode(Graph* graph, std::span<Node* const> dependencies, std::uint64_t address,
                        Node** node) {
  if (node == nullptr) return cudaErrorInvalidValue;
  std::lock_guard lock(graphMutex());
  if (!isLiveGraph(graph) || graph->isChild()) return cudaErrorInvalidValue;
  if (cudaError_t error = checkGraphFree(*graph, address); error != cudaSuccess) return error;
  return graph->add(NodeKind::kMemFree, FreeWork{address}, dependencies, node);
}

cudaError_t allocationNodeParams(const Node* node, std::uint64_t* bytes, int* device,
                                 std::uint64_t* address) {
  std::lock_guard lock(graphMutex());
  if (!isLiveNode(node) || node->kind != NodeKind::kMemAlloc) return cudaErrorInvalidValue;
  const auto& work = std::get<AllocWork>(node->work);
  *bytes = work.bytes;
  *device = work.device;
  *address = work.allocation->base();
  return cudaSuccess;
}

cudaError_t freeNodeAddress(const Node* node, std::uint64_t* address) {
  std::lock_guard lock(graphMutex());
  if (!isLiveNode(node) || node->kind != NodeKind::kMemFree) return cudaErrorInvalidValue;
  *address = std::get<FreeWork>(node->work).address;
  return cudaSuccess;
}

}  // namespace agileos::client
