// Executable graphs (cudaGraphExec_t) and their launch (untrusted side), shared by both shims.
//
// Instantiation orders a graph's nodes once (a node after its dependencies, child graphs
// inlined) and copies their work, so that later changes to the graph do not reach the executable
// graph, as in CUDA. A launch puts the nodes' work on the launch stream in that order through the
// session's own functions (a launch, a copy, ...), each sent to the worker like the program's
// calls and validated there as it arrives. Running the nodes one after another on one stream is
// one of the schedules the graph's edges allow, and the graph as a whole stays ordered after the
// stream's earlier work and before its later work. Launched into a capturing stream, the nodes
// are captured in turn.
//
// Before anything is sent, every copy and memset node's device range must still lie in live
// memory of the client (a graph that names memory freed since is refused with
// cudaErrorInvalidValue, and nothing of it runs); the worker checks each node again regardless.
// Graph memory nodes (graph_memory.h) are followed through the launch for that check: a range of
// a graph allocation must be live where the node runs, an allocation node's allocation must not
// be live when it runs (cudaErrorInvalidValue: the graph's allocation was not freed since its last
// launch, unless instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch, which frees it
// first), and a free node's must be.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "client/session/graph.h"

namespace agileos::client {

struct ExecutableNode {
  const Node* origin = nullptr;       // the node it was instantiated from (for cudaGraphExec*SetParams)
  const Node* updatedFrom = nullptr;  // the node of the graph of the last cudaGraphExecUpdate
  NodeKind kind = NodeKind::kEmpty;
  NodeWork work;
  bool enabled = true;
  // The node's dependencies, as positions in its own graph's topological order (sorted): what
  // cudaGraphExecUpdate compares to tell a changed topology (an edge added or removed). The edges
  // of a child graph node itself are not kept (its nodes are inlined).
  std::vector<std::uint32_t> dependencyPositions;
};

class ExecutableGraph {
 public:
  // Held while the graph runs and while its nodes change; graphMutex() is not held while it runs.
  std::mutex mutex;
  std::vector<ExecutableNode> nodes;
  unsigned long long flags = 0;
  // The graph's instanceMark() where it has memory or conditional nodes (at most one executable
  // graph at a time).
  std::shared_ptr<int> instanceOf;
  // The user objects the graph and its child graphs held when it was instantiated.
  UserObjectReferences userObjects;
  // The conditional handles of the graph (graph_conditionals.h), held: an executable graph outlives
  // its graph. A launch sets them to their default first where they say so
  // (cudaGraphCondAssignDefault).
  std::vector<std::shared_ptr<const ConditionalHandle>> conditionalHandles;
  // CUDA orders each launch of an executable graph after its previous launch, on whatever stream
  // that ran (cudaGraphLaunch). The stream (token; 0 is the legacy stream) of the last launch
  // outside a capture, and an event, made at the first launch on another stream, that orders the
  // next launch after it.
  std::optional<std::uint64_t> lastLaunchStream;
  cudaEvent_t previousLaunchDone = nullptr;
};

// Lock order: graphMutex() may be taken while an executable graph's mutex is held (a launch's
// nodes may be captured, and capturedWork takes graphMutex()), never the other way round: the
// functions that take an executable graph's mutex are called with graphMutex() free.

// The graph's nodes in launch order, child graphs inlined, their work copied. False when the
// edges form a cycle. The caller holds graphMutex().
bool flattenGraph(const Graph& graph, std::vector<ExecutableNode>* nodes);

// Whether two versions of a node's work are copies whose direction changed, as far as the kinds
// tell it: both explicit and different (natively the memory types of the two sides may not change;
// a cudaMemcpyDefault copy names none, so it is not judged here, and the worker checks the memory
// of every copy as it runs). False when either is not a copy.
bool copyDirectionChanged(const NodeWork& before, const NodeWork& after);

// The caller holds graphMutex(). cudaErrorInvalidValue for a graph whose edges form a cycle, and
// for a graph with memory nodes that has an executable graph already.
cudaError_t instantiateGraph(const Graph& graph, unsigned long long flags, ExecutableGraph** executable);
bool isLiveExecutable(const ExecutableGraph* executable);  // the caller holds graphMutex()
// Makes the handle stale (the caller holds graphMutex()); false if it was not live. Then the
// caller, with graphMutex() free, calls deleteExecutable, which waits for a launch in progress.
bool retireExecutable(ExecutableGraph* executable);
void deleteExecutable(ExecutableGraph* executable);

// The executable node instantiated from `origin`, or null. The caller holds executable.mutex.
ExecutableNode* findExecutableNode(ExecutableGraph& executable, const Node* origin);

// cudaGraphExecUpdate with the graph's flattened nodes: they must have the executable graph's
// shape (as many nodes, in the same order, of the same kinds, with the same dependencies:
// cudaGraphExecUpdateErrorTopologyChanged), copies must keep their direction
// (cudaGraphExecUpdateErrorParametersChanged), and neither may have memory nodes (their
// allocations are fixed: cudaGraphExecUpdateErrorNotSupported); then every node's work is
// replaced.
// Otherwise nothing changes and *result says why. Takes executable.mutex.
cudaError_t updateExecutable(ExecutableGraph& executable, std::vector<ExecutableNode> nodes,
                             cudaGraphExecUpdateResult* result, const Node** errorNode);

// Runs the executable graph on `stream` (a resolved token). The caller holds no lock.
cudaError_t launchExecutable(ExecutableGraph& executable, std::uint64_t stream);

// The three calls both shims make on handles the program passed, with the locking above: each
// checks that the handle is live (cudaErrorInvalidValue otherwise).
cudaError_t instantiateLiveGraph(Graph* graph, unsigned long long flags, ExecutableGraph** executable);
cudaError_t launchLiveExecutable(ExecutableGraph* executable, std::uint64_t stream);
cudaError_t destroyLiveExecutable(ExecutableGraph* executable);

// A node's work, run now on `stream` through the session's functions.
cudaError_t runNodeWork(NodeKind kind, const NodeWork& work, std::uint64_t stream);

}  // namespace agileos::client
