#include "client/session/stream_capture.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "client/session/graph_memory_nodes.h"

namespace agileos::client {
namespace {

struct Capture {
  unsigned long long id = 0;
  Graph* graph = nullptr;
  std::unique_ptr<Graph> ownedGraph;  // null for cudaStreamBeginCaptureToGraph
  int mode = cudaStreamCaptureModeGlobal;
  std::uint64_t origin = 0;
  bool invalidated = false;
  // Per stream in the capture: the nodes its next captured work depends on.
  std::unordered_map<std::uint64_t, std::vector<Node*>> frontier;
  std::unordered_set<const Node*> created;  // nodes this capture added
};

struct CapturedEvent {
  std::weak_ptr<Capture> capture;
  std::vector<Node*> nodes;  // the recording stream's dependencies at the record
};

// All guarded by graphMutex(). The counts are read without it to keep the calls of a process
// that never captures free of locking: a stream starts capturing only through a call of the
// program, which orders it before the program's own later calls on that stream.
std::unordered_map<std::uint64_t, std::shared_ptr<Capture>>& capturingStreams() {
  static auto* streams = new std::unordered_map<std::uint64_t, std::shared_ptr<Capture>>();
  return *streams;
}
std::unordered_map<std::uint64_t, CapturedEvent>& capturedEvents() {
  static auto* events = new std::unordered_map<std::uint64_t, CapturedEvent>();
  return *events;
}
std::atomic<std::size_t> gCapturingStreams{0};
std::atomic<std::size_t> gCapturedEvents{0};
unsigned long long gNextCaptureId = 0;

void syncCounts() {
  gCapturingStreams.store(capturingStreams().size(), std::memory_order_relaxed);
  gCapturedEvents.store(capturedEvents().size(), std::memory_order_relaxed);
}

Capture* captureOf(std::uint64_t stream) {
  auto it = capturingStreams().find(stream);
  return it == capturingStreams().end() ? nullptr : it->second.get();
}

void addUnique(std::vector<Node*>& nodes, Node* node) {
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
}

// Adds a node after the stream's frontier, which becomes the node.
cudaError_t addToCapture(Capture& capture, std::uint64_t stream, NodeKind kind, NodeWork work) {
  if (capture.invalidated) return cudaErrorStreamCaptureInvalidated;
  std::vector<Node*>& frontier = capture.frontier[stream];
  Node* node = nullptr;
  if (cudaError_t error = capture.graph->add(kind, std::move(work), frontier, &node); error != cudaSuccess) {
    capture.invalidated = true;  // a dependency is gone (the program removed a node of the graph)
    return cudaErrorStreamCaptureInvalidated;
  }
  capture.created.insert(node);
  frontier.assign(1, node);
  return cudaSuccess;
}

// Ends the capture for every stream in it and forgets the events recorded in it.
void detach(const Capture& capture) {
  std::erase_if(capturingStreams(), [&](const auto& entry) { return entry.second.get() == &capture; });
  std::erase_if(capturedEvents(), [&](const auto& entry) {
    auto owner = entry.second.capture.lock();
    return owner == nullptr || owner.get() == &capture;
  });
  syncCounts();
}

}  // namespace

bool anyCapture() { return gCapturingStreams.load(std::memory_order_relaxed) != 0; }

std::optional<cudaError_t> capturedWork(std::uint64_t stream, NodeKind kind, NodeWork work) {
  if (!anyCapture()) return std::nullopt;
  std::lock_guard lock(graphMutex());
  Capture* capture = captureOf(stream);
  if (capture == nullptr) return std::nullopt;
  return addToCapture(*capture, stream, kind, std::move(work));
}

std::optional<cudaError_t> capturedAllocation(std::uint64_t stream, std::uint64_t bytes,
                                              std::uint64_t* address) {
  if (!anyCapture()) return std::nullopt;
  std::lock_guard lock(graphMutex());
  Capture* capture = captureOf(stream);
  if (capture == nullptr) return std::nullopt;
  if (capture->invalidated) return cudaErrorStreamCaptureInvalidated;
  if (capture->graph->isChild()) {
    // Captured into a child graph (cudaStreamBeginCaptureToGraph): a child graph has no memory
    // nodes (graph.h).
    capture->invalidated = true;
    return cudaErrorStreamCaptureUnsupported;
  }
  // The reservation is made now (a call to the worker under graphMutex(), which only graph calls
  // wait for), so that the address is the program's at once, as natively.
  AllocWork work;
  work.bytes = bytes;
  if (cudaError_t error =
          addGraphAllocation(*capture->graph, capture->frontier[stream], bytes, &work.allocation);
      error != cudaSuccess) {
    capture->invalidated = true;
    return error;
  }
  const std::uint64_t base = work.allocation->base();
  if (cudaError_t error = addToCapture(*capture, stream, NodeKind::kMemAlloc, std::move(work));
      error != cudaSuccess)
    return error;
  *address = base;
  return cudaSuccess;
}

std::optional<cudaError_t> capturedFree(std::uint64_t stream, std::uint64_t address) {
  if (!anyCapture()) return std::nullopt;
  std::lock_guard lock(graphMutex());
  Capture* capture = captureOf(stream);
  if (capture == nullptr) return std::nullopt;
  if (capture->invalidated) return cudaErrorStreamCaptureInvalidated;
  if (address == 0) return cudaSuccess;  // cudaFreeAsync(nullptr) frees nothing
  // Memory no allocation node of the capture made: the call fails and the capture goes on, as
  // natively (stop 39's probe_graph_alloc_capture).
  if (cudaError_t error = checkGraphFree(*capture->graph, address); error != cudaSuccess) return error;
  return addToCapture(*capture, stream, NodeKind::kMemFree, FreeWork{address});
}

std::optional<cudaError_t> refusedInCapture(std::uint64_t stream) {
  if (!anyCapture()) return std::nullopt;
  std::lock_guard lock(graphMutex());
  Capture* capture = captureOf(stream);
  if (capture == nullptr) return std::nullopt;
  capture->invalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

std::optional<cudaError_t> capturedEventRecord(std::uint64_t event, std::uint64_t stream, unsigned flags) {
  if (!anyCapture() && gCapturedEvents.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(graphMutex());
  auto it = capturingStreams().find(stream);
  if (it == capturingStreams().end()) {
    // Recorded outside any capture: the event names real work again.
    capturedEvents().erase(event);
    syncCounts();
    return std::nullopt;
  }
  Capture& capture = *it->second;
  if (capture.invalidated) return cudaErrorStreamCaptureInvalidated;
  if ((flags & cudaEventRecordExternal) != 0) {
    // Recorded when the graph runs, for waiters outside the graph.
    return addToCapture(capture, stream, NodeKind::kEventRecord, EventWork{event});
  }
  capturedEvents()[event] = CapturedEvent{it->second, capture.frontier[stream]};
  syncCounts();
  return cudaSuccess;
}

std::optional<cudaError_t> capturedEventWait(std::uint64_t stream, std::uint64_t event, unsigned flags) {
  if (!anyCapture() && gCapturedEvents.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(graphMutex());
  Capture* waiter = captureOf(stream);
  std::shared_ptr<Capture> recorder;
  std::vector<Node*> recorded;
  if (auto found = capturedEvents().find(event); found != capturedEvents().end()) {
    recorder = found->second.capture.lock();
    recorded = found->second.nodes;
  }
  if (recorder != nullptr && (flags & cudaEventWaitExternal) == 0) {
    if (waiter == nullptr) {
      // The stream joins the capture (a fork): its work depends on what the event recorded.
      capturingStreams()[stream] = recorder;
      recorder->frontier[stream] = recorded;
      syncCounts();
      return cudaSuccess;
    }
    if (waiter != recorder.get()) {
      // Two captures may not be merged.
      waiter->invalidated = true;
      recorder->invalidated = true;
      return cudaErrorStreamCaptureMerge;
    }
    if (waiter->invalidated) return cudaErrorStreamCaptureInvalidated;
    std::vector<Node*>& frontier = waiter->frontier[stream];
    for (Node* node : recorded) addUnique(frontier, node);
    return cudaSuccess;
  }
  if (waiter == nullptr) return std::nullopt;
  // An event recorded outside the capture: only an external wait (cudaEventWaitExternal) makes a
  // wait node, which waits for it when the graph runs; a plain wait would tie the capture to work
  // outside it, which CUDA refuses and invalidates the capture for (stop 39's probe_capture_rules).
  if ((flags & cudaEventWaitExternal) == 0) {
    waiter->invalidated = true;
    return cudaErrorStreamCaptureIsolation;
  }
  return addToCapture(*waiter, stream, NodeKind::kEventWait, EventWork{event});
}

void forgetCapturedEvent(std::uint64_t event) {
  if (gCapturedEvents.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(graphMutex());
  capturedEvents().erase(event);
  syncCounts();
}

cudaError_t beginCapture(std::uint64_t stream, int mode, Graph* graph, std::span<Node* const> dependencies) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return cudaErrorInvalidValue;
  }
  if (stream == 0) return cudaErrorStreamCaptureUnsupported;  // the legacy stream cannot capture
  if (!isKnownStream(stream)) return cudaErrorInvalidResourceHandle;
  std::lock_guard lock(graphMutex());
  if (captureOf(stream) != nullptr) return cudaErrorIllegalState;
  auto capture = std::make_shared<Capture>();
  if (graph == nullptr) {
    capture->ownedGraph = std::make_unique<Graph>();
    capture->graph = capture->ownedGraph.get();
  } else {
    if (!isLiveGraph(graph)) return cudaErrorInvalidValue;
    capture->graph = graph;
  }
  std::vector<Node*> frontier;
  for (Node* node : dependencies) {
    if (!capture->graph->owns(node)) return cudaErrorInvalidValue;
    addUnique(frontier, node);
  }
  capture->id = ++gNextCaptureId;
  capture->mode = mode;
  capture->origin = stream;
  capture->frontier[stream] = std::move(frontier);
  capturingStreams()[stream] = std::move(capture);
  syncCounts();
  return cudaSuccess;
}

cudaError_t endCapture(std::uint64_t stream, Graph** graph) {
  if (graph != nullptr) *graph = nullptr;
  std::lock_guard lock(graphMutex());
  auto it = capturingStreams().find(stream);
  if (it == capturingStreams().end()) return cudaErrorIllegalState;
  std::shared_ptr<Capture> capture = it->second;
  // No place for the graph: only a capture into the program's own graph may end so (its graph is
  // the program's already); a capture that made its graph would lose it. Nothing changes then.
  if (graph == nullptr && capture->ownedGraph) return cudaErrorInvalidValue;
  if (capture->origin != stream) {
    capture->invalidated = true;
    return cudaErrorStreamCaptureUnmatched;
  }
  detach(*capture);
  if (capture->invalidated) return cudaErrorStreamCaptureInvalidated;
  // Every stream that forked from the origin must have been joined back: the work the capture
  // added ends in nodes the origin stream depends on.
  const std::vector<Node*>& joined = capture->frontier[stream];
  for (Node* leaf : capture->graph->leaves()) {
    if (capture->created.contains(leaf) && std::find(joined.begin(), joined.end(), leaf) == joined.end()) {
      return cudaErrorStreamCaptureUnjoined;
    }
  }
  Graph* captured = capture->ownedGraph ? capture->ownedGraph.release() : capture->graph;
  if (graph != nullptr) *graph = captured;
  return cudaSuccess;
}

CaptureInfo captureInfo(std::uint64_t stream) {
  CaptureInfo info;
  if (!anyCapture()) return info;
  std::lock_guard lock(graphMutex());
  auto it = capturingStreams().find(stream);
  if (it == capturingStreams().end()) return info;
  Capture& capture = *it->second;
  info.status = capture.invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  info.id = capture.id;
  info.graph = capture.graph;
  info.dependencies = &capture.frontier[stream];
  return info;
}

cudaError_t updateCaptureDependencies(std::uint64_t stream, std::span<Node* const> dependencies,
                                      unsigned flags) {
  if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies) {
    return cudaErrorInvalidValue;
  }
  std::lock_guard lock(graphMutex());
  Capture* capture = captureOf(stream);
  if (capture == nullptr) return cudaErrorIllegalState;
  if (capture->invalidated) return cudaErrorStreamCaptureInvalidated;
  for (Node* node : dependencies) {
    if (!capture->graph->owns(node)) return cudaErrorInvalidValue;
  }
  std::vector<Node*>& frontier = capture->frontier[stream];
  if (flags == cudaStreamSetCaptureDependencies) frontier.clear();
  for (Node* node : dependencies) addUnique(frontier, node);
  return cudaSuccess;
}

}  // namespace agileos::client
