#include "client/session/graph_launch.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "client/session/context_calls.h"
#include "client/session/copy_engine.h"
#include "client/session/device_allocations.h"
#include "client/session/graph_conditionals.h"
#include "client/session/graph_memory.h"
#include "client/session/stream_capture.h"
#include "client/session/stream_event_calls.h"
#include "client/session/streams.h"

namespace agileos::client {
namespace {

std::unordered_set<const ExecutableGraph*>& liveExecutables() {
  static auto* executables = new std::unordered_set<const ExecutableGraph*>();  // never destroyed
  return *executables;
}

// Appends the graph's nodes in topological order, child graphs' nodes in place of their node, and a
// conditional node with each of its bodies flattened. False for a cycle, for conditional nodes
// nested deeper than kMaxConditionalDepth, and for memory nodes in a body (an allocation's
// liveness is followed through a launch in order; a body may run any number of times).
bool flatten(const Graph& graph, std::vector<ExecutableNode>* out, int depth = 0) {
  std::vector<const Node*> order;
  if (!graph.topologicalOrder(&order)) return false;
  std::unordered_map<const Node*, std::uint32_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<std::uint32_t>(i);
  const auto positionsOf = [&position](const Node* node) {
    std::vector<std::uint32_t> positions;
    for (const Node* dependency : node->dependencies) positions.push_back(position.at(dependency));
    std::sort(positions.begin(), positions.end());
    return positions;
  };
  for (const Node* node : order) {
    if (const auto* child = std::get_if<ChildWork>(&node->work)) {
      if (child->graph && !flatten(*child->graph, out, depth)) return false;
      continue;
    }
    if (const auto* conditional = std::get_if<ConditionalWork>(&node->work)) {
      if (depth >= kMaxConditionalDepth) return false;
      auto bodies = std::make_shared<std::vector<std::vector<ExecutableNode>>>();
      for (const auto& body : conditional->bodies) {
        if (body->hasMemoryNodes()) return false;
        bodies->emplace_back();
        if (!flatten(*body, &bodies->back(), depth + 1)) return false;
      }
      ConditionalWork work;
      work.handle = conditional->handle;
      work.type = conditional->type;
      work.flattened = std::move(bodies);
      out->push_back(
          ExecutableNode{node, nullptr, node->kind, std::move(work), node->enabled, positionsOf(node)});
      continue;
    }
    out->push_back(
        ExecutableNode{node, nullptr, node->kind, copyWork(node->work), node->enabled, positionsOf(node)});
  }
  return true;
}

// The conditional handles of `graph` and of the graphs inside it.
void collectConditionalHandles(const Graph& graph,
                               std::vector<std::shared_ptr<const ConditionalHandle>>* out) {
  out->insert(out->end(), graph.conditionalHandles.begin(), graph.conditionalHandles.end());
  for (const auto& node : graph.nodes()) {
    if (const auto* child = std::get_if<ChildWork>(&node->work); child != nullptr && child->graph)
      collectConditionalHandles(*child->graph, out);
    if (const auto* conditional = std::get_if<ConditionalWork>(&node->work)) {
      for (const auto& body : conditional->bodies) collectConditionalHandles(*body, out);
    }
  }
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

// The graph allocations' liveness as a launch goes through its nodes: what the session's record
// says before the launch, changed by the allocation and free nodes run so far.
class LaunchLiveness {
 public:
  bool live(std::uint64_t base) const {
    auto it = changed_.find(base);
    return it != changed_.end() ? it->second : graphAllocationLive(base);
  }
  bool changed(std::uint64_t base) const { return changed_.contains(base); }
  void set(std::uint64_t base, bool live) { changed_[base] = live; }

 private:
  std::map<std::uint64_t, bool> changed_;
};

// A device address of the client's range that is no longer in live memory (freed since the node
// was made), or in a graph allocation that is not live where the node runs. Addresses outside the
// user range are left to the worker's checks.
bool namesFreedMemory(std::uint64_t p, std::uint64_t bytes, const LaunchLiveness& liveness) {
  if (bytes == 0 || !isDeviceAddress(reinterpret_cast<const void*>(p))) return false;
  std::uint64_t base = 0, size = 0;
  if (graphAllocationContaining(p, &base, &size)) {
    return !liveness.live(base) || bytes > size - (p - base);
  }
  return !surelyDeviceRange(p, bytes);
}

bool namesFreedMemory(const ExecutableNode& node, const LaunchLiveness& liveness) {
  if (!node.enabled) return false;
  if (const auto* conditional = std::get_if<ConditionalWork>(&node.work)) {
    // Every body may run: each is checked, and so is the condition's word.
    if (namesFreedMemory(conditional->handle, sizeof(unsigned), liveness)) return true;
    for (const auto& body : *conditional->flattened) {
      for (const ExecutableNode& inner : body) {
        if (namesFreedMemory(inner, liveness)) return true;
      }
    }
    return false;
  }
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
    return (dstMayBeDevice && namesFreedMemory(dst, dstBytes, liveness)) ||
           (srcMayBeDevice && namesFreedMemory(src, srcBytes, liveness));
  }
  if (const auto* fill = std::get_if<FillWork>(&node.work)) {
    std::uint64_t bytes = 0;
    if (fill->width > UINT64_MAX / fill->elementSize) return true;
    if (!extentOf(fill->dst, fill->pitch, fill->width * fill->elementSize, fill->height, &bytes)) return true;
    return namesFreedMemory(fill->dst, bytes, liveness);
  }
  return false;
}

bool isMemoryNode(NodeKind kind) { return kind == NodeKind::kMemAlloc || kind == NodeKind::kMemFree; }

// Goes through the launch before anything is sent (launch_graph.h): cudaErrorInvalidValue when a
// node names memory that is not live where it runs, or an allocation node's allocation is live
// still. *autoFree receives the allocations live before the launch that an allocation node makes
// again, which cudaGraphInstantiateFlagAutoFreeOnLaunch frees first.
cudaError_t checkLaunch(const ExecutableGraph& executable, std::vector<std::uint64_t>* autoFree) {
  const bool freesOnLaunch = (executable.flags & cudaGraphInstantiateFlagAutoFreeOnLaunch) != 0;
  LaunchLiveness liveness;
  for (const ExecutableNode& node : executable.nodes) {
    if (const auto* alloc = std::get_if<AllocWork>(&node.work)) {
      const std::uint64_t base = alloc->allocation->base();
      if (liveness.live(base)) {
        if (!freesOnLaunch || liveness.changed(base)) return cudaErrorInvalidValue;
        autoFree->push_back(base);
      }
      liveness.set(base, true);
    } else if (const auto* freed = std::get_if<FreeWork>(&node.work)) {
      if (!liveness.live(freed->address)) return cudaErrorInvalidValue;
      liveness.set(freed->address, false);
    } else if (namesFreedMemory(node, liveness)) {
      return cudaErrorInvalidValue;
    }
  }
  return cudaSuccess;
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

// The references of `graph` and of its child graphs, whose nodes an executable graph inlines.
static void collectUserObjects(const Graph& graph, UserObjectReferences* references) {
  references->addAll(graph.userObjects);
  for (const auto& node : graph.nodes()) {
    if (const auto* child = std::get_if<ChildWork>(&node->work); child != nullptr && child->graph)
      collectUserObjects(*child->graph, references);
  }
}

cudaError_t instantiateGraph(const Graph& graph, unsigned long long flags, ExecutableGraph** executable) {
  auto created = std::make_unique<ExecutableGraph>();
  created->flags = flags;
  if (graph.hasMemoryNodes() || graph.hasConditionalNodes()) {
    // One executable graph at a time, as CUDA allows for a graph with memory nodes: its
    // allocations have one address each, which two executable graphs would share.
    if (graph.instanceMark().use_count() > 1) return cudaErrorInvalidValue;
    created->instanceOf = graph.instanceMark();
  }
  if (!flatten(graph, &created->nodes)) return cudaErrorInvalidValue;  // a cycle (see flatten)
  collectUserObjects(graph, &created->userObjects);
  collectConditionalHandles(graph, &created->conditionalHandles);
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
  if (executable->previousLaunchDone != nullptr) destroyEvent(executable->previousLaunchDone);
  delete executable;
}

ExecutableNode* findExecutableNode(ExecutableGraph& executable, const Node* origin) {
  for (ExecutableNode& node : executable.nodes) {
    if (node.origin == origin || (node.updatedFrom != nullptr && node.updatedFrom == origin)) return &node;
  }
  return nullptr;
}

bool copyDirectionChanged(const NodeWork& before, const NodeWork& after) {
  const auto* from = std::get_if<CopyWork>(&before);
  const auto* to = std::get_if<CopyWork>(&after);
  return from != nullptr && to != nullptr && from->kind != cudaMemcpyDefault &&
         to->kind != cudaMemcpyDefault && from->kind != to->kind;
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
    if (isMemoryNode(nodes[i].kind) || isMemoryNode(executable.nodes[i].kind) ||
        nodes[i].kind == NodeKind::kConditional || executable.nodes[i].kind == NodeKind::kConditional) {
      *result = cudaGraphExecUpdateErrorNotSupported;
      *errorNode = nodes[i].origin;
      return cudaErrorGraphExecUpdateFailure;
    }
    if (nodes[i].kind != executable.nodes[i].kind) {
      *result = cudaGraphExecUpdateErrorNodeTypeChanged;
      *errorNode = nodes[i].origin;
      return cudaErrorGraphExecUpdateFailure;
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dependencyPositions != executable.nodes[i].dependencyPositions) {
      *result = cudaGraphExecUpdateErrorTopologyChanged;
      *errorNode = nodes[i].origin;
      return cudaErrorGraphExecUpdateFailure;
    }
    if (copyDirectionChanged(executable.nodes[i].work, nodes[i].work)) {
      *result = cudaGraphExecUpdateErrorParametersChanged;
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
    case NodeKind::kEventWait: {
      // A wait node replayed into a capture stays a wait node: an external wait there (a plain
      // wait on an event recorded outside the capture is refused, stream_capture.h); outside a
      // capture, a plain wait (the driver refuses the external flag there).
      const unsigned flags =
          captureInfo(stream).status != cudaStreamCaptureStatusNone ? unsigned{cudaEventWaitExternal} : 0u;
      return waitEventOnStream(streamHandle, reinterpret_cast<cudaEvent_t>(std::get<EventWork>(work).event),
                               flags, DefaultStream::kLegacy);
    }
    case NodeKind::kMemAlloc:
      return activateGraphAllocation(std::get<AllocWork>(work).allocation->base(), stream);
    case NodeKind::kMemFree:
      return freeGraphAllocation(std::get<FreeWork>(work).address, stream);
    case NodeKind::kChildGraph:  // inlined at instantiation
    case NodeKind::kEmpty:
      return cudaSuccess;
    case NodeKind::kConditional:  // evaluated by the launch (runNodes)
      return cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}

namespace {

cudaError_t runNodes(const std::vector<ExecutableNode>& nodes, std::uint64_t stream);

// The condition's word once the stream's work so far is done (graph_conditionals.h).
cudaError_t readCondition(std::uint64_t handle, std::uint64_t stream, unsigned* value) {
  CopyTarget target;
  target.stream = stream;
  target.async = true;  // ordered after the stream's work, and complete on return
  return copyDeviceToHost(value, handle, sizeof *value, target);
}

cudaError_t runConditional(const ConditionalWork& conditional, std::uint64_t stream) {
  const auto& bodies = *conditional.flattened;
  unsigned value = 0;
  if (cudaError_t error = readCondition(conditional.handle, stream, &value); error != cudaSuccess)
    return error;
  switch (conditional.type) {
    case cudaGraphCondTypeIf:
      if (value != 0) return runNodes(bodies.at(0), stream);
      return bodies.size() == 2 ? runNodes(bodies[1], stream) : cudaSuccess;
    case cudaGraphCondTypeWhile:
      while (value != 0) {
        if (cudaError_t error = runNodes(bodies.at(0), stream); error != cudaSuccess) return error;
        if (cudaError_t error = readCondition(conditional.handle, stream, &value); error != cudaSuccess)
          return error;
      }
      return cudaSuccess;
    case cudaGraphCondTypeSwitch:
      return value < bodies.size() ? runNodes(bodies[value], stream) : cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

cudaError_t runNodes(const std::vector<ExecutableNode>& nodes, std::uint64_t stream) {
  for (const ExecutableNode& node : nodes) {
    if (!node.enabled) continue;
    const cudaError_t error = node.kind == NodeKind::kConditional
                                  ? runConditional(std::get<ConditionalWork>(node.work), stream)
                                  : runNodeWork(node.kind, node.work, stream);
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

}  // namespace

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

namespace {

// Orders this launch of `executable` on `stream` after its previous launch (the caller holds
// executable.mutex). On the same stream, stream order does it. On another, an event recorded now
// on the previous launch's stream, waited for on this one: it also waits for work queued there
// after that launch, more than CUDA asks, never less. Both go to the worker past stream capture
// (recordEventOnWorker): a capture another thread begins meanwhile on either stream must not
// take them, and while the previous stream captures, a record on the worker's stream still marks
// the previous launch. Not done for a launch into a capture: that becomes nodes of the capture,
// ordered by its dependencies.
cudaError_t orderAfterPreviousLaunch(ExecutableGraph& executable, std::uint64_t stream) {
  if (captureInfo(stream).status != cudaStreamCaptureStatusNone) return cudaSuccess;
  const std::optional<std::uint64_t> previous = executable.lastLaunchStream;
  executable.lastLaunchStream = stream;
  if (!previous || *previous == stream) return cudaSuccess;
  // The previous stream was destroyed since: its work may still run, and only the device's whole
  // queue is known to hold it.
  if (!isKnownStream(*previous)) return synchronizeDevice();
  if (executable.previousLaunchDone == nullptr) {
    if (cudaError_t error = createEvent(cudaEventDisableTiming, &executable.previousLaunchDone);
        error != cudaSuccess) {
      return error;
    }
  }
  const auto event = reinterpret_cast<std::uint64_t>(executable.previousLaunchDone);
  if (cudaError_t error = recordEventOnWorker(event, *previous, 0); error != cudaSuccess) return error;
  return waitEventOnWorker(stream, event, 0);
}

}  // namespace

cudaError_t launchExecutable(ExecutableGraph& executable, std::uint64_t stream) {
  std::lock_guard lock(executable.mutex);
  if (executable.instanceOf) {
    // A graph with memory nodes is not captured into another graph: its allocations would be
    // made by two graphs. One with conditional nodes is evaluated as it runs, which a capture
    // cannot do.
    if (auto refused = refusedInCapture(stream)) return *refused;
  }
  std::vector<std::uint64_t> autoFree;
  if (cudaError_t error = checkLaunch(executable, &autoFree); error != cudaSuccess) return error;
  if (cudaError_t error = orderAfterPreviousLaunch(executable, stream); error != cudaSuccess) return error;
  for (std::uint64_t base : autoFree) {
    if (cudaError_t error = freeGraphAllocation(base, stream); error != cudaSuccess) return error;
  }
  for (const auto& handle : executable.conditionalHandles) {
    if (!handle->assignDefault) continue;
    CopyTarget target;
    target.stream = stream;
    target.async = true;
    target.returnsEarly = true;  // the value is sent with the request
    if (cudaError_t error =
            copyHostToDevice(handle->address, &handle->defaultValue, sizeof handle->defaultValue, target);
        error != cudaSuccess) {
      return error;
    }
  }
  return runNodes(executable.nodes, stream);
}

}  // namespace agileos::client
