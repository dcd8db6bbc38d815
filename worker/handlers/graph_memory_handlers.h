// Graph allocation reservations (the GRAPH_* steps of proto StreamOrderedMemory;
// worker/graph_memory.h): what the stream-ordered memory and cudaFree handlers share.
#pragma once

#include "worker/call_context.h"

namespace agileos::worker {

// The GRAPH_* steps. Only for handlers that run exclusively within their client
// (Exclusivity::kInvalidates): a reservation that goes invalidates addresses.
void graphMemoryStep(CallContext& ctx, const v1::StreamOrderedMemory& args, v1::CallReply& reply);

// A free of `base` (a free node, cudaFreeAsync or cudaFree) when it is a graph reservation of the
// client: the allocation must be live and stops being so; a reservation released meanwhile is
// given back. False, answering nothing, when `base` is no reservation of the client (the caller
// frees it as it frees any allocation). `synchronized`: the context was synchronized for this
// call already (cudaFree).
bool freeGraphAllocation(CallContext& ctx, memmgr::DevicePtr base, bool synchronized, v1::CallReply& reply);

}  // namespace agileos::worker
