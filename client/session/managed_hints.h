// The hints a program gave for its managed memory (cudaMemAdvise, cudaMemPrefetchAsync and the
// driver's cuMemAdvise, cuMemPrefetchAsync), kept page by page so that the range queries
// (cudaMemRangeGetAttribute(s), cuMemRangeGetAttribute(s)) answer what the program set, as the
// driver does (untrusted side: nothing here reaches the worker).
//
// Managed memory here is a segment shared with the worker's mapping (host_allocations.h): it never
// migrates, so the hints change nothing about where pages live; they are accepted and recorded.
// A hint applies to whole pages (the driver rounds the range out to page boundaries), pages of
// kPageBytes within one allocation, which holds its own ManagedHints and drops them when freed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "client/session/enum_bits.h"
#include "client/session/managed_hint_pages.h"

namespace agileos::client {

// Advice and prefetch of both shims, checked and recorded: advice in cudaMemoryAdvise numbering
// (CUmem_advise's too), locations in cudaMemLocationType numbering (CUmemLocationType's too), as
// bits the program passed. cudaErrorInvalidValue, with nothing recorded, for advice that is none, a
// location that is none or another device (read-mostly advice names no location), or a range
// that is not within one managed allocation. A host NUMA location "current" is recorded as the
// calling thread's node, as the driver resolves it.
cudaError_t adviseManaged(const void* p, std::size_t count, int advice, int locationType, int locationId);
cudaError_t prefetchManaged(const void* p, std::size_t count, int locationType, int locationId);

// The range queries of both shims: `attribute` in cudaMemRangeAttribute numbering
// (CUmem_range_attribute's too), `data` of `dataSize` bytes as the driver documents for it.
// cudaErrorInvalidValue for a range that is not within one managed allocation, an unknown
// attribute or a size that does not fit it.
cudaError_t managedRangeAttribute(void* data, std::size_t dataSize, int attribute, const void* devPtr,
                                  std::size_t count);

// cudaMemRangeGetAttributes and cuMemRangeGetAttributes: each attribute as managedRangeAttribute
// answers it, stopping at the first error; none at all is cudaErrorInvalidValue.
template <typename Attribute>
cudaError_t managedRangeAttributes(void** data, std::size_t* dataSizes, const Attribute* attributes,
                                   std::size_t numAttributes, const void* devPtr, std::size_t count) {
  if (numAttributes == 0 || data == nullptr || dataSizes == nullptr || attributes == nullptr)
    return cudaErrorInvalidValue;
  for (std::size_t i = 0; i < numAttributes; ++i) {
    if (cudaError_t error =
            managedRangeAttribute(data[i], dataSizes[i], enumBits(attributes[i]), devPtr, count);
        error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

}  // namespace agileos::client
