#include "client/session/graph_memory_nodes.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

// How often the graph allocates and frees the allocation at `address`, and whether every node
// that does is in `among` (when given).
struct AllocationUse {
  std::size_t allocations = 0;
  std::size_t frees = 0;
  bool allAmong = true;
};

AllocationUse useOf(const Graph& graph, std::uint64_t address, const std::unordered_set<const Node*>* among) {
  AllocationUse use;
  for (const auto& node : graph.nodes()) {
    bool names = false;
    if (const auto* alloc = std::get_if<AllocWork>(&node->work)) {
      names = alloc->allocation && alloc->allocation->base() == address;
      if (names) ++use.allocations;
    } else if (const auto* freed = std::get_if<FreeWork>(&node->work)) {
      names = freed->address == address;
      if (names) ++use.frees;
    }
    if (names && among != nullptr && !among->contains(node.get())) use.allAmong = false;
  }
  return use;
}

}  // namespace

cudaError_t addGraphAllocation(const Graph& graph, std::span<Node* const> dependencies, std::uint64_t bytes,
                               std::shared_ptr<GraphAllocation>* out) {
  if (bytes == 0) return cudaErrorInvalidValue;
  std::unordered_set<const Node*> before;
  std::vector<const Node*> pending;
  for (Node* dependency : dependencies) {
    if (!graph.owns(dependency)) return cudaErrorInvalidValue;
    pending.push_back(dependency);
  }
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    if (!before.insert(node).second) continue;
    for (const Node* dependency : node->dependencies) pending.push_back(dependency);
  }
  // The first allocation of the graph (in the order its nodes were added) that qualifies.
  std::unordered_set<const GraphAllocation*> considered;
  for (const auto& node : graph.nodes()) {
    const auto* alloc = std::get_if<AllocWork>(&node->work);
    if (alloc == nullptr || !alloc->allocation || !considered.insert(alloc->allocation.get()).second)
      continue;
    if (alloc->allocation->size() < bytes) continue;
    const AllocationUse use = useOf(graph, alloc->allocation->base(), &before);
    if (use.allAmong && use.frees == use.allocations) {
      *out = alloc->allocation;
      return cudaSuccess;
    }
  }
  return reserveGraphAllocation(bytes, out);
}

cudaError_t checkGraphFree(const Graph& graph, std::uint64_t address) {
  if (!isGraphAllocation(address)) return cudaErrorInvalidValue;
  const AllocationUse use = useOf(graph, address, nullptr);
  const bool allowed = use.allocations == 0 ? use.frees == 0 : use.frees < use.allocations;
  return allowed ? cudaSuccess : cudaErrorInvalidValue;
}

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
