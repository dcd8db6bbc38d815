// The runtime API's node parameter structures to and from the session's node work
// (client/session/graph.h), checked as the runtime checks them. The driver shim converts its own
// structures (CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, ...) to these first, so a node is checked by
// the same code whichever API made it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "client/session/graph.h"

namespace agileos::client::graph_api {

cudaError_t kernelWork(const cudaKernelNodeParams* params, KernelWork* work);
cudaKernelNodeParams kernelParams(const KernelWork& work);

// Linear memory only: a copy naming a cudaArray is cudaErrorNotSupported, and so is one of several
// slices that do not follow each other (a rectangle of rows is what a node holds).
cudaError_t copyWork(const cudaMemcpy3DParms* params, CopyWork* work);
cudaError_t copyWork1D(void* dst, const void* src, size_t count, cudaMemcpyKind kind, CopyWork* work);
cudaMemcpy3DParms copyParams(const CopyWork& work);

// Elements of 1, 2 or 4 bytes; a value whose bytes differ is cudaErrorNotSupported (the worker
// fills bytes).
cudaError_t fillWork(const cudaMemsetParams* params, FillWork* work);
cudaMemsetParams fillParams(const FillWork& work);

cudaError_t hostWork(const cudaHostNodeParams* params, HostWork* work);

// An event record or wait node's work: a live event of the session (cudaErrorInvalidResourceHandle
// otherwise).
cudaError_t eventWork(cudaEvent_t event, EventWork* work);

// Copy nodes that name a __device__ variable: the device address of [offset, offset + count) of
// the registered `symbol` (cudaErrorInvalidSymbol, or cudaErrorInvalidValue for a range past its
// end; not recorded), and the directions such a copy may take to (from) the variable.
cudaError_t symbolRange(const void* symbol, size_t count, size_t offset, std::uint64_t* address);
bool copiesToSymbol(cudaMemcpyKind kind);
bool copiesFromSymbol(cudaMemcpyKind kind);

// The program's dependency array: null with a count is cudaErrorInvalidValue.
cudaError_t dependencyList(const cudaGraphNode_t* dependencies, size_t count, std::vector<Node*>* out);

// The program's handles are the session's objects.
inline Graph* graphOf(cudaGraph_t graph) { return reinterpret_cast<Graph*>(graph); }
inline cudaGraph_t handleOf(Graph* graph) { return reinterpret_cast<cudaGraph_t>(graph); }
inline Node* nodeOf(cudaGraphNode_t node) { return reinterpret_cast<Node*>(node); }
inline cudaGraphNode_t handleOf(Node* node) { return reinterpret_cast<cudaGraphNode_t>(node); }

// CUDA's output-array convention (cudaGraphGetNodes and friends): with `out` null, *count
// receives the number of nodes; otherwise at most *count are written, the rest of the array is
// nulled and *count receives the number written.
void writeNodes(const std::vector<Node*>& nodes, cudaGraphNode_t* out, size_t* count);

}  // namespace agileos::client::graph_api
