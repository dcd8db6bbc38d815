// Graph memory nodes as both shims and stream capture add them (untrusted side):
// cudaGraphAddMemAllocNode and cuGraphAddMemAllocNode, cudaGraphAddMemFreeNode and
// cuGraphAddMemFreeNode, captured cudaMallocAsync and cudaFreeAsync, and the nodes' GetParams
// (graph_memory.h says what the allocations are). The add and get functions take graphMutex()
// themselves; addGraphAllocation and checkGraphFree are called with it held.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "client/session/graph.h"

namespace agileos::client {

// The graph allocation for an allocation node of `bytes` to be added to `graph` after
// `dependencies` (nodes of the graph): an allocation of the graph that every schedule has freed
// before the node runs, when there is one of at least `bytes` (the node then has its address, as
// the native driver reuses a freed allocation's address); else a new reservation. An allocation
// qualifies when every node of the graph that allocates or frees it is among the new node's
// dependencies (transitively) and it is freed as often as it is allocated there, so no schedule
// reaches the new node while it lives. The caller holds graphMutex().
cudaError_t addGraphAllocation(const Graph& graph, std::span<Node* const> dependencies, std::uint64_t bytes,
                               std::shared_ptr<GraphAllocation>* out);
// Whether a free node of `address` may be added to `graph`: `address` is a graph allocation, and
// the graph frees it fewer times than it allocates it (never, where the graph does not allocate
// it). cudaErrorInvalidValue otherwise. The caller holds graphMutex().
cudaError_t checkGraphFree(const Graph& graph, std::uint64_t address);

// The pool properties and access descriptors of an allocation node, as CUDA checks them: pinned
// device memory of an existing device, no shareable handle type, access only by that device for
// read and write (what the allocation has anyway). cudaErrorInvalidValue otherwise. (The runtime
// and driver structures have one layout.)
cudaError_t checkAllocationNodeProps(const cudaMemPoolProps& props, const cudaMemAccessDesc* accessDescs,
                                     std::size_t accessDescCount);

// Adds an allocation node of `bytes` on `device` to `graph` after `dependencies`; *address is its
// allocation's (fixed from now on: addGraphAllocation).
cudaError_t addAllocationNode(Graph* graph, std::span<Node* const> dependencies, std::uint64_t bytes,
                              int device, Node** node, std::uint64_t* address);
// Adds a free node of the graph allocation at `address` (checkGraphFree) to `graph`.
cudaError_t addFreeNode(Graph* graph, std::span<Node* const> dependencies, std::uint64_t address,
                        Node** node);

// A node's allocation (an allocation node of a live graph): its size, device and address.
cudaError_t allocationNodeParams(const Node* node, std::uint64_t* bytes, int* device, std::uint64_t* address);
// A free node's address.
cudaError_t freeNodeAddress(const Node* node, std::uint64_t* address);

}  // namespace agileos::client
