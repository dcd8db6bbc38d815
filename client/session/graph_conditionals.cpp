#include "client/session/graph_conditionals.h"

#include "client/common/connection.h"
#include "client/session/copy_engine.h"
#include "client/session/memory_calls.h"

namespace agileos::client {
namespace {

constexpr unsigned kMaxSwitchBodies = 4096;

bool ownsHandle(const Graph& graph, std::uint64_t handle) {
  for (const auto& owned : graph.conditionalHandles) {
    if (owned->address == handle) return true;
  }
  return false;
}

void releaseHandle(const ConditionalHandle* handle) {
  if (!Connection::exiting()) freeDevice(handle->address);
  delete handle;
}

}  // namespace

cudaError_t createConditionalHandle(Graph& graph, unsigned defaultValue, unsigned flags,
                                    cudaGraphConditionalHandle* handle) {
  if (handle == nullptr || (flags & ~static_cast<unsigned>(cudaGraphCondAssignDefault)) != 0)
    return cudaErrorInvalidValue;
  std::uint64_t address = 0;
  if (cudaError_t error = allocateDevice(sizeof(unsigned), &address); error != cudaSuccess) return error;
  CopyTarget target;  // synchronous, on the legacy stream: the word holds its value before any launch
  if (cudaError_t error = copyHostToDevice(address, &defaultValue, sizeof defaultValue, target);
      error != cudaSuccess) {
    freeDevice(address);
    return error;
  }
  graph.conditionalHandles.emplace_back(
      new ConditionalHandle{address, defaultValue, (flags & cudaGraphCondAssignDefault) != 0}, releaseHandle);
  *handle = address;
  return cudaSuccess;
}

cudaError_t conditionalWork(const Graph& graph, cudaGraphConditionalHandle handle, int type, unsigned size,
                            ConditionalWork* work) {
  if (!ownsHandle(graph, handle)) return cudaErrorInvalidValue;
  switch (type) {
    case cudaGraphCondTypeIf:
      if (size != 1 && size != 2) return cudaErrorInvalidValue;
      break;
    case cudaGraphCondTypeWhile:
      if (size != 1) return cudaErrorInvalidValue;
      break;
    case cudaGraphCondTypeSwitch:
      if (size == 0 || size > kMaxSwitchBodies) return cudaErrorInvalidValue;
      break;
    default:
      return cudaErrorInvalidValue;
  }
  work->handle = handle;
  work->type = static_cast<cudaGraphConditionalNodeType>(type);
  work->bodies.clear();
  work->bodyHandles.clear();
  for (unsigned i = 0; i < size; ++i) {
    work->bodies.push_back(std::make_unique<Graph>());
    work->bodyHandles.push_back(reinterpret_cast<cudaGraph_t>(work->bodies.back().get()));
  }
  return cudaSuccess;
}

}  // namespace agileos::client
