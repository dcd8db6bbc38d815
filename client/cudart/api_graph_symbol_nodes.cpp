// Copy nodes that name a __device__ variable (cudart exports): the *SetParamsToSymbol and
// *SetParamsFromSymbol calls for a graph's node and for an instantiated graph's. Each is the 1D
// form on the variable's address, after the same checks cudaGraphAddMemcpyNodeToSymbol makes: a
// registered variable, the range inside it, a direction that reads (writes) device memory.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "client/session/error_state.h"
#include "cudart_api.gen.h"  // checks the definitions against the declarations

using namespace agileos::client;

namespace {

// The address of [offset, offset + count) of `symbol`, or the error (recorded).
cudaError_t symbolBytes(const void* symbol, size_t count, size_t offset, char** address) {
  if (symbol == nullptr) return recordError(cudaErrorInvalidSymbol);
  void* base = nullptr;
  size_t size = 0;
  if (cudaError_t error = cudaGetSymbolAddress(&base, symbol); error != cudaSuccess) return error;
  if (cudaError_t error = cudaGetSymbolSize(&size, symbol); error != cudaSuccess) return error;
  if (offset > size || count > size - offset) return recordError(cudaErrorInvalidValue);
  *address = static_cast<char*>(base) + offset;
  return cudaSuccess;
}

bool writesDevice(cudaMemcpyKind kind) {
  return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}
bool readsDevice(cudaMemcpyKind kind) {
  return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}

}  // namespace

extern "C" {

cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void* symbol, const void* src,
                                                 size_t count, size_t offset, enum cudaMemcpyKind kind) {
  if (!writesDevice(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  char* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphMemcpyNodeSetParams1D(node, address, src, count, kind);
}

cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void* dst, const void* symbol,
                                                   size_t count, size_t offset, enum cudaMemcpyKind kind) {
  if (!readsDevice(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  char* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphMemcpyNodeSetParams1D(node, dst, address, count, kind);
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                     const void* symbol, const void* src, size_t count,
                                                     size_t offset, enum cudaMemcpyKind kind) {
  if (!writesDevice(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  char* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphExecMemcpyNodeSetParams1D(hGraphExec, node, address, src, count, kind);
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                       void* dst, const void* symbol, size_t count,
                                                       size_t offset, enum cudaMemcpyKind kind) {
  if (!readsDevice(kind)) return recordError(cudaErrorInvalidMemcpyDirection);
  char* address = nullptr;
  if (cudaError_t error = symbolBytes(symbol, count, offset, &address); error != cudaSuccess) return error;
  return cudaGraphExecMemcpyNodeSetParams1D(hGraphExec, node, dst, address, count, kind);
}

}  // extern "C"
