// The graph calls both shims make, on the handles the program passed (untrusted side). A
// cudaGraph_t and a CUgraph, a cudaGraphNode_t and a CUgraphNode, a cudaGraphExec_t and a
// CUgraphExec are the same C types (struct CUgraph_st* and so on), and here the same objects
// (graph.h, graph_launch.h). So each call is written once: the runtime shim's cudaGraph* export
// records the returned error, the driver shim's cuGraph* export converts it, and the driver shim
// first converts its own parameter structures to the runtime's (graph_node_params.h), so that a node
// is checked by one piece of code whichever API made or changed it.
//
// Every function checks that each handle is live (cudaErrorInvalidValue otherwise, as the runtime
// answers) and returns the error without recording it. Locking is graph.h's and graph_launch.h's:
// graph and node calls hold graphMutex(); executable-graph calls take the executable graph's mutex
// with graphMutex() free.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>

#include "client/session/graph.h"
#include "client/session/graph_launch.h"
#include "client/session/graph_node_params.h"
#include "client/session/streams.h"

namespace agileos::client::graph_api {

inline ExecutableGraph* executableOf(cudaGraphExec_t exec) {
  return reinterpret_cast<ExecutableGraph*>(exec);
}
inline cudaGraphExec_t handleOf(ExecutableGraph* exec) { return reinterpret_cast<cudaGraphExec_t>(exec); }

// Runs `body(Node&)` on a live node of `kind` with graphMutex() held.
template <typename Body>
cudaError_t withNode(cudaGraphNode_t handle, NodeKind kind, Body body) {
  std::lock_guard lock(graphMutex());
  Node* node = nodeOf(handle);
  if (!isLiveNode(node) || node->kind != kind) return cudaErrorInvalidValue;
  return body(*node);
}

// Runs `body(ExecutableGraph&)` on a live executable graph with its mutex held and graphMutex()
// free (the lock order graph_launch.h states).
template <typename Body>
cudaError_t withExecutable(cudaGraphExec_t exec, Body body) {
  ExecutableGraph* executable = executableOf(exec);
  {
    std::lock_guard lock(graphMutex());
    if (!isLiveExecutable(executable)) return cudaErrorInvalidValue;
  }
  std::lock_guard lock(executable->mutex);
  return body(*executable);
}

// Whether edge data describes plain dependencies only (null, or default-type edges without ports):
// the only edges offered (CUgraphEdgeData is this layout).
bool plainEdges(const cudaGraphEdgeData* edgeData, size_t count);

// --- graphs and their topology ---
cudaError_t createGraph(cudaGraph_t* graph, unsigned flags);
cudaError_t destroyGraph(cudaGraph_t graph);
cudaError_t cloneGraph(cudaGraph_t* clone, cudaGraph_t original);
cudaError_t findInClone(cudaGraphNode_t* node, cudaGraphNode_t original, cudaGraph_t clone);
cudaError_t destroyNode(cudaGraphNode_t node);
// Edge data other than plain dependencies is cudaErrorNotSupported when adding and
// cudaErrorInvalidValue when removing (no such edge exists). CUgraphEdgeData is this layout.
cudaError_t addDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                            const cudaGraphEdgeData* edgeData, size_t count);
cudaError_t removeDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                               const cudaGraphEdgeData* edgeData, size_t count);
cudaError_t getNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t getRootNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
// Edge data, where asked for, is written as plain dependencies (all zero).
cudaError_t getEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                     cudaGraphEdgeData* edgeData, size_t* count);
cudaError_t getDependencies(cudaGraphNode_t node, cudaGraphNode_t* dependencies, cudaGraphEdgeData* edgeData,
                            size_t* count);
cudaError_t getDependents(cudaGraphNode_t node, cudaGraphNode_t* dependents, cudaGraphEdgeData* edgeData,
                          size_t* count);
cudaError_t nodeType(cudaGraphNode_t node, cudaGraphNodeType* type);

// --- adding nodes ---
// Adds a node with the work the caller built and checked (`built`: its error, returned as it is).
cudaError_t addNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                    size_t count, NodeKind kind, cudaError_t built, NodeWork work);
cudaError_t addKernelNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                          size_t count, const cudaKernelNodeParams* params);
// An event record or wait node (kind kEventRecord or kEventWait) on a live event.
cudaError_t addEventNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                         size_t count, NodeKind kind, cudaEvent_t event);
// The node holds its own copy of `child`, as CUDA makes; a child with memory nodes is
// cudaErrorNotSupported (its copy would allocate at the original's addresses).
cudaError_t addChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                              size_t count, cudaGraph_t child);

// cudaGraphConditionalHandleCreate (graph_conditionals.h).
cudaError_t createConditionalHandle(cudaGraphConditionalHandle* handle, cudaGraph_t graph,
                                    unsigned defaultValue, unsigned flags);
// A conditional node on a handle made for `graph`; *bodies receives the node's body graphs (valid
// while the node lives), as phGraph_out.
cudaError_t addConditionalNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                               size_t count, cudaGraphConditionalHandle handle, int type, unsigned size,
                               cudaGraph_t** bodies);

// --- a node's parameters ---
// Replaces a node's work with `work`, which the caller built and checked (`built`: its error).
cudaError_t setNodeWork(cudaGraphNode_t node, NodeKind kind, cudaError_t built, NodeWork work);
// New kernel parameters keep the node's launch attributes, as natively.
cudaError_t setKernelNodeParams(cudaGraphNode_t node, const cudaKernelNodeParams* params);
// A copy of the node's work, for the *GetParams calls (a kernel node's parameter pointers point
// into the node itself: kernelNodeParams gives those).
cudaError_t nodeWork(cudaGraphNode_t node, NodeKind kind, NodeWork* work);
cudaError_t kernelNodeParams(cudaGraphNode_t node, cudaKernelNodeParams* params);
cudaError_t setEventNodeEvent(cudaGraphNode_t node, NodeKind kind, cudaEvent_t event);
cudaError_t eventNodeEvent(cudaGraphNode_t node, NodeKind kind, cudaEvent_t* event);
cudaError_t childGraphOf(cudaGraphNode_t node, cudaGraph_t* graph);
// Launch attributes of a kernel node, read with the launch path's reader (launch_attributes.h),
// so that a node accepts exactly what a launch accepts. CUkernelNodeAttrValue is this layout.
cudaError_t setKernelNodeAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                   const cudaKernelNodeAttrValue* value);
cudaError_t kernelNodeAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                cudaKernelNodeAttrValue* value);
cudaError_t copyKernelNodeAttributes(cudaGraphNode_t destination, cudaGraphNode_t source);

// --- stream capture on the program's stream handles (stream_capture.h does the capturing) ---
// cudaStreamBeginCapture(ToGraph): `mode` as the program passed it, read as an integer; `graph` null
// for a capture that makes its own graph; plain edges only (cudaErrorNotSupported otherwise).
cudaError_t beginStreamCapture(cudaStream_t stream, DefaultStream spelling, int mode, cudaGraph_t graph,
                               const cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edgeData,
                               size_t count);
// cudaStreamEndCapture; `graph` may be null for a capture into the program's own graph.
cudaError_t endStreamCapture(cudaStream_t stream, DefaultStream spelling, cudaGraph_t* graph);
// cudaStreamUpdateCaptureDependencies; edge data is cudaErrorNotSupported.
cudaError_t updateStreamCaptureDependencies(cudaStream_t stream, DefaultStream spelling,
                                            cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edgeData,
                                            size_t count, unsigned flags);

// --- executable graphs (graph_exec_api.cpp) ---
// The flags CUDA defines for instantiation that mean something here (auto-free on launch; node
// priority, the order being the stream's); upload and device launch are cudaErrorNotSupported.
cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
// instantiate() with cudaGraphInstantiateWithParams' result: on a graph whose edges form a cycle,
// cudaGraphInstantiateInvalidStructure and a node the cycle leaves unordered, as natively (stop
// 39's probe_graph_build); any other failure cudaGraphInstantiateError and no node.
cudaError_t instantiateWithResult(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags,
                                  cudaGraphInstantiateResult* result, cudaGraphNode_t* errorNode);
cudaError_t executableFlags(cudaGraphExec_t exec, unsigned long long* flags);
// cudaGraphUpload: nothing is uploaded ahead of a launch; the handles are checked.
cudaError_t uploadExecutable(cudaGraphExec_t exec, std::uint64_t stream);
// Replaces the work of the executable node made from `node` (of the given kind).
cudaError_t setExecutableNodeWork(cudaGraphExec_t exec, cudaGraphNode_t node, NodeKind kind,
                                  cudaError_t built, NodeWork work);
cudaError_t setExecutableKernelParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                      const cudaKernelNodeParams* params);
cudaError_t setExecutableEvent(cudaGraphExec_t exec, cudaGraphNode_t node, NodeKind kind, cudaEvent_t event);
// resultInfo is never null here (the shims check their own forms).
cudaError_t updateExecutableGraph(cudaGraphExec_t exec, cudaGraph_t graph,
                                  cudaGraphExecUpdateResultInfo* info);
cudaError_t setNodeEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned enabled);
cudaError_t nodeEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned* enabled);

}  // namespace agileos::client::graph_api
