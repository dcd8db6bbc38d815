// Graph allocation reservations (the GRAPH_* steps of proto StreamOrderedMemory;
// worker/graph_memory.h): what the stream-ordered memory and cudaFree handlers share.
#pragma once

#include "worker/call_context.h"

namespace agileos::worker {

// The GRAPH_* steps. Only for handlers that run exclusively within their client
// (Exclusivity::kInvalidates): a reservation that goes invalidates addresses.
void graphMemoryStep(CallContext& ctx, const v1::StreamOrderedMemory& args, v1::CallReply& reply);

// Where a graph allocation's free is ordered: after cudaFree's synchronize of the context, or on
// a stream (resolved, with its identity: streamIdentity).
struct GraphFreeOrder {
  bool synchronized = false;
  CUstream stream = nullptr;
  std::uint64_t streamIdentity = 0;
};

// A free of `base` (a free node, cudaFreeAsync or cudaFree) when it is a graph reservation of the
// client: the allocation must be live and stops being so; a reservation released meanwhile is
// given back. False, answering nothing, when `base` is no reservation of the client (the caller
// frees it as it frees any allocation).
bool freeGraphAllocation(CallContext& ctx, memmgr::DevicePtr base, const GraphFreeOrder& order,
                         v1::CallReply& reply);

}  // namespace agileos::worker
