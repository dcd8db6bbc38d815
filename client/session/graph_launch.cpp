#include "client/session/graph_launch.h"

#include <memory>
#include <unordered_set>

#include "client/session/copy_engine.h"
#include "client/session/device_allocations.h"
#include "client/session/stream_event_calls.h"

namespace agileos::client {
namespace {

std::unordered_set<const ExecutableGraph*>& liveExecutables() {
  static auto* executables = new std::unordered_set<const ExecutableGraph*>();  // never destroyed
  return *executables;
}

// Appends the graph's nodes in topological order, child graphs' nodes in place of their node.
bool flatten(const Graph& graph, std::vector<ExecutableNode>* out) {
  std::vector<const Node*> order;
  if (!graph.topologicalOrder(&order)) return false;
  for (const Node* node : order) {
    if (const auto* child = std::get_if<ChildWork>(&node->work)) {
      if (child->graph && !flatten(*child->graph, out)) return false;
      continue;
    }
    out->push_back(ExecutableNode{node, nullptr, node->kind, copyWork(node->work), node->enabled});
  }
  return true;
}

// [p, p + (height - 1) * pitch + width): false when it overflows.
bool extentOf(std::uint64_t p, std::uint64_t pitch, std::uint64_t width, std::uint64_t height,
              std::uint64_t* bytes) {
  if (height == 0 || width == 0) {
    *bytes = 0;
    return true;
  }
  if (pitch != 0 && height - 1 > (UINT64_MAX - width) / pitch) return false;
  *bytes = (height - 1) * pitch + width;
  return *bytes <= UINT64_MAX - p;
}

// A device address of the client's range that is no longer in live memory (freed since the node
// was made). Addresses outside the user range are left to the worker's checks.
bool namesFreedMemory(std::uint64_t p, std::uint64_t bytes) {
  if (bytes == 0 || !isDeviceAddress(reinterpret_cast<const void*>(p))) return false;
  return !surelyDeviceRange(p, bytes);
}

bool namesFreedMemory(const ExecutableNode& node) {
  if (!node.enabled) return false;
  if (const auto* copy = std::get_if<CopyWork>(&node.work)) {
    const auto dst = reinterpret_cast<std::uint64_t>(copy->dst);
    const auto src = reinterpret_cast<std::uint64_t>(copy->src);
    std::uint64_t dstBytes = 0, srcBytes = 0;
    if (!extentOf(dst, copy->dstPitch, copy->width, copy->height, &dstBytes) ||
        !extentOf(src, copy->srcPitch, copy->width, copy->height, &srcBytes)) {
      return true;
    }
    const bool dstMayBeDevice = copy->kind != cudaMemcpyDeviceToHost && copy->kind != cudaMemcpyHostToHost;
    const bool srcMayBeDevice = copy->kind != cudaMemcpyHostToDevice && copy->kind != cudaMemcpyHostToHost;
    return (dstMayBeDevice && namesFreedMemory(dst, dstBytes)) ||
           (srcMayBeDevice && namesFreedMemory(src, srcBytes));
  }
  if (const auto* fill = std::get_if<FillWork>(&node.work)) {
    std::uint64_t bytes = 0;
    if (fill->width > UINT64_MAX / fill->elementSize) return true;
    if (!extentOf(fill->dst, fill->pitch, fill->width * fill->elementSize, fill->height, &bytes)) return true;
    return namesFreedMemory(fill->dst, bytes);
  }
  return false;
}

// The byte a memset of elementSize-byte elements writes everywhere, when all its bytes are one.
bool uniformByte(const FillWork& fill, unsigned* byte) {
  const unsigned low = fill.value & 0xffu;
  for (unsigned i = 1; i < fill.elementSize; ++i) {
    if (((fill.value >> (8 * i)) & 0xffu) != low) return false;
  }
  *byte = low;
  return true;
}

}  // namespace

bool flattenGraph(const Graph& graph, std::vector<ExecutableNode>* nodes) {
  nodes->clear();
  return flatten(graph, nodes);
}

cudaError_t instantiateGraph(const Graph& graph, unsigned long long flags, ExecutableGraph** executable) {
  auto created = std::make_unique<ExecutableGraph>();
  created->flags = flags;
  if (!flatten(graph, &created->nodes)) return cudaErrorInvalidValue;  // a cycle
  liveExecutables().insert(created.get());
  *executable = created.release();
  return cudaSuccess;
}

bool isLiveExecutable(const ExecutableGraph* executable) {
  return executable != nullptr && liveExecutables().contains(executable);
}

bool retireExecutable(ExecutableGraph* executable) { return liveExecutables().erase(executable) != 0; }

void deleteExecutable(ExecutableGraph* executable) {
  // A launch still running on another thread holds the mutex: wait for it.
  { std::lock_guard wait(executable->mutex); }
  delete executable;
}

ExecutableNode* findExecutableNode(ExecutableGraph& executable, const Node* origin) {
  for (ExecutableNode& node : executable.nodes) {
    if (node.origin == origin || (node.updatedFrom != nullptr && node.updatedFrom == origin)) return &node;
  }
  return nullptr;
}

cudaError_t updateExecutable(ExecutableGraph& executable, std::vector<ExecutableNode> nodes,
                             cudaGraphExecUpdateResult* result, const Node** errorNode) {
  *errorNode = nullptr;
  std::lock_guard lock(executable.mutex);
  if (nodes.size() != executable.nodes.size()) {
    *result = cudaGraphExecUpdateErrorTopologyChanged;
    return cudaErrorGraphExecUpdateFailure;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind != executable.nodes[i].kind) {
      *result = cudaGraphExecUpdateErrorNodeTypeChanged;
      *errorNode = nodes[i].origin;
      return cudaErrorGraphExecUpdateFailure;
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].updatedFrom = nodes[i].origin;
    nodes[i].origin = executable.nodes[i].origin;
  }
  executable.nodes = std::move(nodes);
  *result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

cudaError_t runNodeWork(NodeKind kind, const NodeWork& work, std::uint64_t stream) {
  CopyTarget target;
  target.stream = stream;
  target.async = true;
  target.returnsEarly = true;
  const auto streamHandle = reinterpret_cast<cudaStream_t>(stream);  // tokens are never 1 or 2
  switch (kind) {
    case NodeKind::kKernel: {
      const auto& kernel = std::get<KernelWork>(work);
      LaunchShape shape{kernel.grid,  kernel.block,           kernel.sharedMem,
                        streamHandle, DefaultStream::kLegacy, kernel.cooperative};
      shape.attributes = kernel.attributes;
      shape.function = kernel.function;
      return launchKernelWithBuffer(kernel.layout, shape, kernel.params.data(), kernel.params.size());
    }
    case NodeKind::kMemcpy: {
      const auto& copy = std::get<CopyWork>(work);
      return copyRows(copy.dst, copy.dstPitch, copy.src, copy.srcPitch, copy.width, copy.height, copy.kind,
                      target);
    }
    case NodeKind::kMemset: {
      const auto& fill = std::get<FillWork>(work);
      unsigned byte = 0;
      if (!uniformByte(fill, &byte)) return cudaErrorNotSupported;  // refused when the node was made
      return fillRows(fill.dst, fill.pitch, static_cast<int>(byte), fill.width * fill.elementSize,
                      fill.height, target);
    }
    case NodeKind::kHost: {
      const auto& host = std::get<HostWork>(work);
      return runHostFunction(streamHandle, DefaultStream::kLegacy, host.function, host.userData);
    }
    case NodeKind::kEventRecord:
      return recordEvent(reinterpret_cast<cudaEvent_t>(std::get<EventWork>(work).event), streamHandle, 0,
                         DefaultStream::kLegacy);
    case NodeKind::kEventWait:
      return waitEventOnStream(streamHandle, reinterpret_cast<cudaEvent_t>(std::get<EventWork>(work).event),
                               0, DefaultStream::kLegacy);
    case NodeKind::kChildGraph:  // inlined at instantiation
    case NodeKind::kEmpty:
      return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

cudaError_t instantiateLiveGraph(Graph* graph, unsigned long long flags, ExecutableGraph** executable) {
  std::lock_guard lock(graphMutex());
  if (!isLiveGraph(graph)) return cudaErrorInvalidValue;
  return instantiateGraph(*graph, flags, executable);
}

cudaError_t launchLiveExecutable(ExecutableGraph* executable, std::uint64_t stream) {
  {
    std::lock_guard lock(graphMutex());
    if (!isLiveExecutable(executable)) return cudaErrorInvalidValue;
  }
  return launchExecutable(*executable, stream);
}

cudaError_t destroyLiveExecutable(ExecutableGraph* executable) {
  {
    std::lock_guard lock(graphMutex());
    if (!retireExecutable(executable)) return cudaErrorInvalidValue;
  }
  deleteExecutable(executable);
  return cudaSuccess;
}

cudaError_t launchExecutable(ExecutableGraph& executable, std::uint64_t stream) {
  std::lock_guard lock(executable.mutex);
  for (const ExecutableNode& node : executable.nodes) {
    if (namesFreedMemory(node)) return cudaErrorInvalidValue;
  }
  for (const ExecutableNode& node : executable.nodes) {
    if (!node.enabled) continue;
    if (cudaError_t error = runNodeWork(node.kind, node.work, stream); error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

}  // namespace agileos::client
