// Graph allocations (untrusted side), shared by the runtime and the driver shims: the memory of
// CUDA graph memory nodes (cudaGraphAddMemAllocNode, cudaMallocAsync captured into a graph).
//
// An allocation node's address is fixed when the node is added and is the same at every launch,
// as natively: adding the node reserves address space of its size in the worker (GRAPH_RESERVE of
// proto StreamOrderedMemory; worker/graph_memory.h, which binds physical memory at each launch and
// shares it between allocations whose lifetimes do not overlap), whose address the node keeps. The
// reservation is not live: the worker refuses every call that names it until a launch runs the allocation
// node (activateGraphAllocation, a request ordered with the program's other calls), and a free node,
// cudaFreeAsync or cudaFree of it makes it not live again. A GraphAllocation is held by every
// node, copied node and executable node that allocates it; when the last holder goes (its graphs
// and executable graphs are destroyed) the reservation is released (GRAPH_RELEASE), and the worker
// gives it back once it is not live.
//
// This record only mirrors what the worker decides (which reservation is live), so that a launch
// can be refused before any of its nodes runs; the worker checks every step again.
//
// Thread-safety: every function is safe to call concurrently; the record's lock is a leaf (taken
// under graphMutex(), never around a call to the worker).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace agileos::client {

class GraphAllocation {
 public:
  GraphAllocation(std::uint64_t base, std::uint64_t size, std::uint64_t generation)
      : base_(base), size_(size), generation_(generation) {}
  ~GraphAllocation();  // releases the reservation (unless a device reset took it already)
  GraphAllocation(const GraphAllocation&) = delete;
  GraphAllocation& operator=(const GraphAllocation&) = delete;

  std::uint64_t base() const { return base_; }
  std::uint64_t size() const { return size_; }

 private:
  const std::uint64_t base_;
  const std::uint64_t size_;
  const std::uint64_t generation_;  // device resets before the reservation was made
};

// A new reservation of `size` bytes (> 0), not live.
cudaError_t reserveGraphAllocation(std::uint64_t size, std::shared_ptr<GraphAllocation>* out);

// Whether `base` is exactly the address of a graph allocation (*size: its reservation's size).
bool isGraphAllocation(std::uint64_t base, std::uint64_t* size = nullptr);
bool graphAllocationLive(std::uint64_t base);
// The graph allocation whose reservation holds `p`; false when none does.
bool graphAllocationContaining(std::uint64_t p, std::uint64_t* base, std::uint64_t* size);

// An allocation node runs on `stream` (a resolved token): the reservation becomes live, with
// memory bound to it (the worker refuses one that is live).
cudaError_t activateGraphAllocation(std::uint64_t base, std::uint64_t stream);
// A free node runs on `stream` (a resolved token), as cudaFreeAsync of the allocation.
cudaError_t freeGraphAllocation(std::uint64_t base, std::uint64_t stream);
// cudaFree or cudaFreeAsync freed the graph allocation at `base` (a no-op for other addresses).
void noteGraphAllocationFreed(std::uint64_t base);

// cudaDeviceGraphMemTrim, cudaDeviceGetGraphMemAttribute, cudaDeviceSetGraphMemAttribute (after
// the device ordinal was checked): `value` points to a 64-bit count.
cudaError_t graphMemoryTrim();
cudaError_t graphMemoryAttribute(cudaGraphMemAttributeType attribute, void* value);
cudaError_t setGraphMemoryAttribute(cudaGraphMemAttributeType attribute, const void* value);

// After cudaDeviceReset: every reservation is gone in the worker; the graphs that still hold
// allocations release nothing, and their launches are refused by the worker.
void forgetAllGraphAllocations();

}  // namespace agileos::client
