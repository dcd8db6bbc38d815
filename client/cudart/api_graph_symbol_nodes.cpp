// Copy nodes that name a __device__ variable (cudart exports): the *SetParamsToSymbol and
// *SetParamsFromSymbol calls for a graph's node and for an instantiated graph's. Each is the 1D
// form on the variable's address, after the checks cudaGraphAddMemcpyNodeToSymbol makes
// (graph_node_params.h: a registered variable, the range inside it, a direction to or from it).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "client/session/error_state.h"
#include "client/session/graph_node_params.h"
#include "cudart_api.gen.h"  // checks the definitions against the declarations

using namespace agileos::client;
using namespace agileos::client::graph_api;

namespace {

// The variable's bytes, or the error (recorded).
cudaError_t symbolBytes(const void* symbol, size_t count, size_t offset, void** address) {
  std::uint64_t device = 0;
  if (cudaError_t error = symbolRange(symbol, count, offset, &device); error != cudaSuccess)
    return recordError(error);
  *address = reinterpret_cast<void*>(device);
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void* symbol, const void* src,
                                                 size_t count, size_t offset, enum cudaMemcpyKind kind) {
  if (!copiesToSymbol(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  void* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphMemcpyNodeSetParams1D(node, address, src, count, kind);
}

cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void* dst, const void* symbol,
                                                   size_t count, size_t offset, enum cudaMemcpyKind kind) {
  if (!copiesFromSymbol(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  void* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphMemcpyNodeSetParams1D(node, dst, address, count, kind);
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                     const void* symbol, const void* src, size_t count,
                                                     size_t offset, enum cudaMemcpyKind kind) {
  if (!copiesToSymbol(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  void* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphExecMemcpyNodeSetParams1D(hGraphExec, node, address, src, count, kind);
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                       void* dst, const void* symbol, size_t count,
                                                       size_t offset, enum cudaMemcpyKind kind) {
  if (!copiesFromSymbol(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  void* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphExecMemcpyNodeSetParams1D(hGraphExec, node, dst, address, count, kind);
}

}  // extern "C"
