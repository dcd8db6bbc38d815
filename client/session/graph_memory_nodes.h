// Graph memory nodes as both shims add and read them (untrusted side): cudaGraphAddMemAllocNode
// and cuGraphAddMemAllocNode, cudaGraphAddMemFreeNode and cuGraphAddMemFreeNode, and their
// GetParams (graph_memory.h says what the allocations are). Each takes graphMutex() itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "client/session/graph.h"

namespace agileos::client {

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
