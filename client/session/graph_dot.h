// cudaGraphDebugDotPrint / cuGraphDebugDotPrint (untrusted side, shared by both shims): the graph
// as Graphviz DOT, written to a file of the program's own. One vertex per node (its type and
// shape: grid and block of a kernel, bytes of a copy or memset), one edge per dependency, child
// graphs as clusters. The flags ask for more or less detail natively; the same detail is written
// whatever they are.
#pragma once

#include <cuda_runtime_api.h>

#include "client/session/graph.h"

namespace agileos::client {

// Takes graphMutex(). cudaErrorInvalidValue for a graph that is not live or no path,
// cudaErrorOperatingSystem when the file cannot be written.
cudaError_t printGraphDot(Graph* graph, const char* path);

}  // namespace agileos::client
