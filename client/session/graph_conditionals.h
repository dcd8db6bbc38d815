// Conditional graph nodes (untrusted side): cudaGraphConditionalHandleCreate and the conditional
// nodes of cudaGraphAddNode, for both shims.
//
// A handle is the device address of a 32-bit word of the client's memory, made for one graph and
// freed with it. Kernels set it with cudaGraphSetConditional, which the worker defines in each
// module as a store through the handle (ptx/graph_conditionals.h), checked by the guard like any
// store. A conditional node is evaluated by the client's executor where it comes in the launch
// (graph_launch.h): it waits for the stream's work so far, reads the word (a 4-byte copy to the
// host, ordered on the stream) and runs the chosen body graphs' nodes on the stream like any
// other node, each validated by the worker as it arrives. So a launch with conditional nodes blocks
// the launching thread at each of them (a round trip per evaluation, per WHILE iteration): correct,
// not fast. Body graphs are the node's own (the program adds nodes to them, or captures into them);
// nested conditional nodes are evaluated the same way, to kMaxConditionalDepth.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "client/session/graph.h"

namespace agileos::client {

inline constexpr int kMaxConditionalDepth = 16;

// Makes a handle for `graph` (the caller holds graphMutex() and has checked the graph is live):
// 4 bytes of device memory holding defaultValue, freed when the graph and its executable graphs
// are gone (nothing is freed at exit: the session's end frees it). Flags: 0 or cudaGraphCondAssignDefault
// (the word is set to defaultValue at the start of each launch of a graph holding the handle).
cudaError_t createConditionalHandle(Graph& graph, unsigned defaultValue, unsigned flags,
                                    cudaGraphConditionalHandle* handle);

// The work of a conditional node for `graph`: the handle must be one made for that graph; the type
// and size as CUDA allows them (IF: 1 or 2 bodies, WHILE: 1, SWITCH: 1 or more, at most 4096).
// Makes its empty body graphs. The caller holds graphMutex().
cudaError_t conditionalWork(const Graph& graph, cudaGraphConditionalHandle handle, int type, unsigned size,
                            ConditionalWork* work);

}  // namespace agileos::client
