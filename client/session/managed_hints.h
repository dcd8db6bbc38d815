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

#include "client/session/managed_hint_pages.h"

namespace agileos::client {

// Both shims record what they accepted (after checking the advice and the location): advice in
// cudaMemoryAdvise numbering (CUmem_advise's too), locations in cudaMemLocationType numbering. A
// host NUMA location "current" is recorded as the calling thread's node, as the driver resolves it.
// False, with nothing recorded, unless [p, p+count) lies in one managed allocation.
bool recordAdvice(const void* p, std::size_t count, int advice, int locationType, int locationId);
bool recordPrefetch(const void* p, std::size_t count, int locationType, int locationId);

// The range queries of both shims: `attribute` in cudaMemRangeAttribute numbering
// (CUmem_range_attribute's too), `data` of `dataSize` bytes as the driver documents for it.
// cudaErrorInvalidValue for a range that is not within one managed allocation, an unknown
// attribute or a size that does not fit it.
cudaError_t managedRangeAttribute(void* data, std::size_t dataSize, int attribute, const void* devPtr,
                                  std::size_t count);

}  // namespace agileos::client
