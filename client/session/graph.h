// CUDA graphs as the client records them (untrusted side), shared by the runtime and the driver
// shims: a cudaGraph_t is a Graph, a cudaGraphNode_t a Node, a cudaGraphExec_t an ExecutableGraph
// (graph_launch.h), all objects of this process.
//
// Why graphs live here and not in the worker: a node is a call the program could have made (a
// launch, a copy, a memset, a host function, an event record or wait), kept with its arguments.
// Launching a graph makes those calls, through the same session functions as the program's own
// calls, so the worker validates every node each time it runs, exactly as if the program had
// called it then: a graph cannot carry work past the worker's checks, and one that names memory
// freed since is refused (graph_launch.h checks its copies and memsets before anything runs,
// the worker checks every node again as it arrives). Nothing of a graph is trusted. Graph memory
// nodes are the exception the worker knows of: an allocation node names a reservation the worker
// made when the node was added, which a launch makes live (graph_memory.h).
//
// Thread-safety: graphs, nodes and their handles are guarded by one mutex (graphMutex()); a
// program that changes a graph while another thread instantiates it gets one of the two orders.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <variant>
#include <vector>

#include "client/session/graph_memory.h"
#include "client/session/kernel_launch.h"
#include "client/session/module_registry.h"
#include "client/session/user_objects.h"

namespace agileos::client {

class Graph;
struct ExecutableNode;  // graph_launch.h

// A kernel launch with its parameters packed at the offsets the worker reported (KernelLayout).
struct KernelWork {
  KernelLayout layout;
  const void* function = nullptr;  // as the program named it: a host stub, a cudaKernel_t or a CUfunction
  dim3 grid;
  dim3 block;
  std::size_t sharedMem = 0;
  bool cooperative = false;
  std::vector<LaunchAttributeValue> attributes;
  std::vector<char> params;              // layout.bufferSize bytes
  std::vector<void*> parameterPointers;  // into params, one per parameter (cudaKernelNodeParams)
};

// width bytes of each of height rows, rows pitch bytes apart on each side (a 1D copy is one row).
struct CopyWork {
  void* dst = nullptr;
  std::size_t dstPitch = 0;
  const void* src = nullptr;
  std::size_t srcPitch = 0;
  std::size_t width = 0;
  std::size_t height = 1;
  cudaMemcpyKind kind = cudaMemcpyDefault;
};

// A memset of height rows of width elements; every element is `value`'s low elementSize bytes.
struct FillWork {
  std::uint64_t dst = 0;
  std::size_t pitch = 0;
  unsigned value = 0;
  unsigned elementSize = 1;
  std::size_t width = 0;  // elements
  std::size_t height = 1;
};

struct HostWork {
  cudaHostFn_t function = nullptr;
  void* userData = nullptr;
};

struct EventWork {
  std::uint64_t event = 0;  // the worker's token
};

struct ChildWork {
  std::unique_ptr<Graph> graph;  // the node's own copy, as cudaGraphAddChildGraphNode makes
};

struct EmptyWork {};

// A graph memory node's allocation (graph_memory.h): the reservation, shared by every node that
// allocates at its address (copies of the node, and later nodes of the same graph that reuse it:
// addGraphAllocation), and the node's own size and device.
struct AllocWork {
  std::shared_ptr<GraphAllocation> allocation;
  std::uint64_t bytes = 0;
  int device = 0;
};

// A graph memory node's free of the graph allocation at `address` (of this or another graph).
struct FreeWork {
  std::uint64_t address = 0;
};

// A conditional node (graph_conditionals.h): when it runs, the 32-bit word at `handle` decides which
// of its body graphs run (IF: body 0 when non-zero, else body 1 if there is one; WHILE: body 0 while
// non-zero, read again after each run; SWITCH: body n for the value n, none past the last).
struct ConditionalWork {
  std::uint64_t handle = 0;  // the device address of the condition's word
  cudaGraphConditionalNodeType type = cudaGraphCondTypeIf;
  // A graph's node: its body graphs (the node's own, as a child graph node's) and their handles,
  // which the program's phGraph_out points at while the node lives.
  std::vector<std::unique_ptr<Graph>> bodies;
  std::vector<cudaGraph_t> bodyHandles;
  // An executable graph's node: each body's nodes in launch order (instantiateGraph).
  std::shared_ptr<const std::vector<std::vector<ExecutableNode>>> flattened;
};

// A conditional handle (cudaGraphConditionalHandleCreate): a 32-bit word of device memory of the
// client that kernels set with cudaGraphSetConditional (the worker defines it as a store:
// ptx/graph_conditionals.h), held by the graph it was made for and by that graph's executable
// graphs; the memory goes with the last of them (graph_conditionals.h makes the handle).
struct ConditionalHandle {
  std::uint64_t address = 0;
  unsigned defaultValue = 0;
  bool assignDefault = false;  // cudaGraphCondAssignDefault: set to defaultValue at each launch
};

using NodeWork = std::variant<KernelWork, CopyWork, FillWork, HostWork, ChildWork, EmptyWork, EventWork,
                              AllocWork, FreeWork, ConditionalWork>;

// The node type a program sees (cudaGraphNodeType, equal to CUgraphNodeType).
enum class NodeKind : int {
  kKernel = cudaGraphNodeTypeKernel,
  kMemcpy = cudaGraphNodeTypeMemcpy,
  kMemset = cudaGraphNodeTypeMemset,
  kHost = cudaGraphNodeTypeHost,
  kChildGraph = cudaGraphNodeTypeGraph,
  kEmpty = cudaGraphNodeTypeEmpty,
  kEventWait = cudaGraphNodeTypeWaitEvent,
  kEventRecord = cudaGraphNodeTypeEventRecord,
  kMemAlloc = cudaGraphNodeTypeMemAlloc,
  kMemFree = cudaGraphNodeTypeMemFree,
  kConditional = cudaGraphNodeTypeConditional,
};

struct Node {
  Graph* owner = nullptr;
  NodeKind kind = NodeKind::kEmpty;
  NodeWork work;
  std::vector<Node*> dependencies;  // nodes of the same graph, no repeats
  std::vector<Node*> dependents;
  bool enabled = true;               // in an executable graph: a disabled node does nothing
  const Node* clonedFrom = nullptr;  // for cudaGraphNodeFindInClone
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a node after `dependencies` (each a node of this graph, no repeats):
  // cudaErrorInvalidValue otherwise, and nothing is added.
  cudaError_t add(NodeKind kind, NodeWork work, std::span<Node* const> dependencies, Node** node);
  // Edges from[i] -> to[i]; all or nothing. An edge that exists already is cudaErrorInvalidValue.
  cudaError_t addEdges(std::span<Node* const> from, std::span<Node* const> to);
  cudaError_t removeEdges(std::span<Node* const> from, std::span<Node* const> to);
  // Removes `node` and its edges.
  void remove(Node* node);

  bool owns(const Node* node) const;
  // A child graph node's graph: the program may add to it, but destroys it only with its node.
  bool isChild() const { return child_; }
  void markChild() { child_ = true; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Node*> roots() const;
  // Nodes without dependents (what a capture must have joined into its origin stream).
  std::vector<Node*> leaves() const;

  // Whether the graph has allocation or free nodes. Such a graph, as CUDA has it, cannot be cloned
  // (nor become a child graph, which is a copy), loses no node or edge, and has at most one
  // executable graph at a time (instanceMark).
  bool hasMemoryNodes() const;
  // Whether the graph has conditional nodes. Such a graph, as CUDA has it, cannot be cloned nor
  // become a child graph, and has at most one executable graph at a time.
  bool hasConditionalNodes() const;
  // Shared with the graph's executable graphs: more than one owner means one exists.
  const std::shared_ptr<int>& instanceMark() const { return instanceMark_; }

  // A deep copy; `mapping`, if given, receives (original, copy) for every node of this graph.
  std::unique_ptr<Graph> clone(std::vector<std::pair<const Node*, Node*>>* mapping = nullptr) const;

  // Every node in an order that respects the edges (a node before its dependents; among the
  // ready ones, the earlier added first). False when the edges form a cycle.
  bool topologicalOrder(std::vector<const Node*>* order) const;

  // cudaGraphRetainUserObject's references: released with the graph, copied by clone() and into
  // every executable graph made from it.
  UserObjectReferences userObjects;

  // The conditional handles made for this graph.
  std::vector<std::shared_ptr<const ConditionalHandle>> conditionalHandles;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  bool child_ = false;
  std::shared_ptr<int> instanceMark_ = std::make_shared<int>(0);
};

// Copies the work, child graphs deeply.
NodeWork copyWork(const NodeWork& work);

std::mutex& graphMutex();

// Handles the program holds, so that a stale or forged one is cudaErrorInvalidValue rather than a
// crash: every Graph and Node registers itself while it lives. The caller holds graphMutex().
bool isLiveGraph(const Graph* graph);
// The node, if it is a node of a live graph (top-level graphs and child graphs alike).
bool isLiveNode(const Node* node);

// Builds a kernel node's work: resolves the layout of `function` and packs `args` (one pointer per
// parameter) or `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE). For the runtime shim `function` is
// a host stub or a cudaKernel_t; the driver shim passes its own resolver's layout.
cudaError_t packKernelWork(const KernelLayout& layout, const void* function, void* const* args,
                           void* const* extra, KernelWork* work);

}  // namespace agileos::client
