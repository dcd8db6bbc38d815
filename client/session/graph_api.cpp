#include "client/session/graph_api.h"

#include <algorithm>
#include <cstring>
#include <variant>
#include <vector>

#include "client/session/graph_conditionals.h"
#include "client/session/launch_attributes.h"
#include "client/session/stream_capture.h"
#include "client/session/streams.h"

namespace agileos::client::graph_api {
namespace {

void zeroEdges(cudaGraphEdgeData* edgeData, size_t count) {
  if (edgeData != nullptr) std::fill(edgeData, edgeData + count, cudaGraphEdgeData{});
}

// Runs `body(Graph&)` on a live graph with graphMutex() held.
template <typename Body>
cudaError_t withGraph(cudaGraph_t handle, Body body) {
  std::lock_guard lock(graphMutex());
  Graph* graph = graphOf(handle);
  if (!isLiveGraph(graph)) return cudaErrorInvalidValue;
  return body(*graph);
}

// Runs `body(Node&)` on a live node of any kind with graphMutex() held.
template <typename Body>
cudaError_t withAnyNode(cudaGraphNode_t handle, Body body) {
  std::lock_guard lock(graphMutex());
  Node* node = nodeOf(handle);
  if (!isLiveNode(node)) return cudaErrorInvalidValue;
  return body(*node);
}

// The two endpoint lists of an edge call.
cudaError_t edgeLists(const cudaGraphNode_t* from, const cudaGraphNode_t* to, size_t count,
                      std::vector<Node*>* fromList, std::vector<Node*>* toList) {
  if (dependencyList(from, count, fromList) != cudaSuccess ||
      dependencyList(to, count, toList) != cudaSuccess)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// The kernel node behind `handle`, or null; the caller holds graphMutex().
KernelWork* kernelOf(cudaGraphNode_t handle) {
  Node* node = nodeOf(handle);
  if (!isLiveNode(node) || node->kind != NodeKind::kKernel) return nullptr;
  return &std::get<KernelWork>(node->work);
}

}  // namespace

bool plainEdges(const cudaGraphEdgeData* edgeData, size_t count) {
  if (edgeData == nullptr) return true;
  for (size_t i = 0; i < count; ++i) {
    if (edgeData[i].from_port != 0 || edgeData[i].to_port != 0 ||
        edgeData[i].type != cudaGraphDependencyTypeDefault)
      return false;
  }
  return true;
}

cudaError_t createGraph(cudaGraph_t* graph, unsigned flags) {
  if (graph == nullptr || flags != 0) return cudaErrorInvalidValue;
  std::lock_guard lock(graphMutex());
  *graph = handleOf(new Graph());
  return cudaSuccess;
}

cudaError_t destroyGraph(cudaGraph_t graph) {
  std::lock_guard lock(graphMutex());
  Graph* target = graphOf(graph);
  if (!isLiveGraph(target) || target->isChild()) return cudaErrorInvalidValue;
  delete target;
  return cudaSuccess;
}

cudaError_t cloneGraph(cudaGraph_t* clone, cudaGraph_t original) {
  if (clone == nullptr) return cudaErrorInvalidValue;
  return withGraph(original, [&](Graph& graph) {
    // A graph with memory nodes cannot be cloned, as in CUDA: its allocations have one address each.
    // Nor one with conditional nodes (CUDA's rule: their handles are the graph's).
    if (graph.hasMemoryNodes() || graph.hasConditionalNodes()) return cudaErrorNotSupported;
    *clone = handleOf(graph.clone().release());
    return cudaSuccess;
  });
}

cudaError_t findInClone(cudaGraphNode_t* node, cudaGraphNode_t original, cudaGraph_t clone) {
  if (node == nullptr) return cudaErrorInvalidValue;
  return withGraph(clone, [&](Graph& graph) {
    for (const auto& candidate : graph.nodes()) {
      if (candidate->clonedFrom == nodeOf(original)) {
        *node = handleOf(candidate.get());
        return cudaSuccess;
      }
    }
    return cudaErrorInvalidValue;
  });
}

cudaError_t destroyNode(cudaGraphNode_t node) {
  return withAnyNode(node, [&](Node& target) {
    // CUDA deletes no node of a graph with memory nodes.
    if (target.owner->hasMemoryNodes()) return cudaErrorNotSupported;
    target.owner->remove(&target);
    return cudaSuccess;
  });
}

cudaError_t addDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                            const cudaGraphEdgeData* edgeData, size_t count) {
  if (!plainEdges(edgeData, count)) return cudaErrorNotSupported;
  std::vector<Node*> fromList, toList;
  if (cudaError_t error = edgeLists(from, to, count, &fromList, &toList); error != cudaSuccess) return error;
  return withGraph(graph, [&](Graph& target) { return target.addEdges(fromList, toList); });
}

cudaError_t removeDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                               const cudaGraphEdgeData* edgeData, size_t count) {
  if (!plainEdges(edgeData, count)) return cudaErrorInvalidValue;
  std::vector<Node*> fromList, toList;
  if (cudaError_t error = edgeLists(from, to, count, &fromList, &toList); error != cudaSuccess) return error;
  return withGraph(graph, [&](Graph& target) {
    // CUDA deletes no edge of a graph with memory nodes.
    if (target.hasMemoryNodes()) return cudaErrorNotSupported;
    return target.removeEdges(fromList, toList);
  });
}

cudaError_t getNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (count == nullptr) return cudaErrorInvalidValue;
  return withGraph(graph, [&](Graph& target) {
    std::vector<Node*> all;
    for (const auto& node : target.nodes()) all.push_back(node.get());
    writeNodes(all, nodes, count);
    return cudaSuccess;
  });
}

cudaError_t getRootNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (count == nullptr) return cudaErrorInvalidValue;
  return withGraph(graph, [&](Graph& target) {
    writeNodes(target.roots(), nodes, count);
    return cudaSuccess;
  });
}

cudaError_t getEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                     cudaGraphEdgeData* edgeData, size_t* count) {
  if (count == nullptr || (from == nullptr) != (to == nullptr)) return cudaErrorInvalidValue;
  return withGraph(graph, [&](Graph& target) {
    std::vector<Node*> fromList, toList;
    for (const auto& node : target.nodes()) {
      for (Node* dependency : node->dependencies) {
        fromList.push_back(dependency);
        toList.push_back(node.get());
      }
    }
    if (from == nullptr) {
      *count = fromList.size();
      return cudaSuccess;
    }
    size_t capacity = *count;
    writeNodes(fromList, from, &capacity);
    writeNodes(toList, to, count);
    zeroEdges(edgeData, *count);
    return cudaSuccess;
  });
}

cudaError_t getDependencies(cudaGraphNode_t node, cudaGraphNode_t* dependencies, cudaGraphEdgeData* edgeData,
                            size_t* count) {
  if (count == nullptr) return cudaErrorInvalidValue;
  return withAnyNode(node, [&](Node& target) {
    writeNodes(target.dependencies, dependencies, count);
    if (dependencies != nullptr) zeroEdges(edgeData, *count);
    return cudaSuccess;
  });
}

cudaError_t getDependents(cudaGraphNode_t node, cudaGraphNode_t* dependents, cudaGraphEdgeData* edgeData,
                          size_t* count) {
  if (count == nullptr) return cudaErrorInvalidValue;
  return withAnyNode(node, [&](Node& target) {
    writeNodes(target.dependents, dependents, count);
    if (dependents != nullptr) zeroEdges(edgeData, *count);
    return cudaSuccess;
  });
}

cudaError_t nodeType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  if (type == nullptr) return cudaErrorInvalidValue;
  return withAnyNode(node, [&](Node& target) {
    *type = static_cast<cudaGraphNodeType>(target.kind);
    return cudaSuccess;
  });
}

cudaError_t addNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                    size_t count, NodeKind kind, cudaError_t built, NodeWork work) {
  if (built != cudaSuccess) return built;
  if (node == nullptr) return cudaErrorInvalidValue;
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, count, &list); error != cudaSuccess) return error;
  return withGraph(graph, [&](Graph& target) {
    Node* added = nullptr;
    if (cudaError_t error = target.add(kind, std::move(work), list, &added); error != cudaSuccess)
      return error;
    *node = handleOf(added);
    return cudaSuccess;
  });
}

cudaError_t addKernelNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                          size_t count, const cudaKernelNodeParams* params) {
  KernelWork work;
  const cudaError_t built = kernelWork(params, &work);
  return addNode(node, graph, dependencies, count, NodeKind::kKernel, built, std::move(work));
}

cudaError_t addEventNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                         size_t count, NodeKind kind, cudaEvent_t event) {
  EventWork work;
  const cudaError_t built = eventWork(event, &work);
  return addNode(node, graph, dependencies, count, kind, built, work);
}

cudaError_t addChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                              size_t count, cudaGraph_t child) {
  ChildWork work;
  const cudaError_t built = withGraph(child, [&](Graph& original) {
    if (child == graph) return cudaErrorInvalidValue;
    // The node's copy would allocate at the original's addresses (CUDA allows such a child only by
    // moving the graph into the node, which is not offered).
    if (original.hasMemoryNodes()) return cudaErrorNotSupported;
    // A graph with conditional nodes cannot become a child graph, as in CUDA.
    if (original.hasConditionalNodes()) return cudaErrorInvalidValue;
    work.graph = original.clone();  // the node's own copy, as CUDA makes
    return cudaSuccess;
  });
  return addNode(node, graph, dependencies, count, NodeKind::kChildGraph, built, std::move(work));
}

cudaError_t createConditionalHandle(cudaGraphConditionalHandle* handle, cudaGraph_t graph,
                                    unsigned defaultValue, unsigned flags) {
  if (handle == nullptr) return cudaErrorInvalidValue;
  return withGraph(graph, [&](Graph& target) {
    return agileos::client::createConditionalHandle(target, defaultValue, flags, handle);
  });
}

cudaError_t addConditionalNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                               size_t count, cudaGraphConditionalHandle handle, int type, unsigned size,
                               cudaGraph_t** bodies) {
  if (node == nullptr || bodies == nullptr) return cudaErrorInvalidValue;
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, count, &list); error != cudaSuccess) return error;
  return withGraph(graph, [&](Graph& target) {
    ConditionalWork work;
    if (cudaError_t error = conditionalWork(target, handle, type, size, &work); error != cudaSuccess)
      return error;
    Node* added = nullptr;
    if (cudaError_t error = target.add(NodeKind::kConditional, std::move(work), list, &added);
        error != cudaSuccess)
      return error;
    *node = handleOf(added);
    *bodies = std::get<ConditionalWork>(added->work).bodyHandles.data();
    return cudaSuccess;
  });
}

cudaError_t beginStreamCapture(cudaStream_t stream, DefaultStream spelling, int mode, cudaGraph_t graph,
                               const cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edgeData,
                               size_t count) {
  if (!plainEdges(edgeData, count)) return cudaErrorNotSupported;
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, count, &list); error != cudaSuccess) return error;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  return beginCapture(token, mode, graph == nullptr ? nullptr : graphOf(graph), list);
}

cudaError_t endStreamCapture(cudaStream_t stream, DefaultStream spelling, cudaGraph_t* graph) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  Graph* captured = nullptr;
  const cudaError_t error = endCapture(token, graph != nullptr ? &captured : nullptr);
  if (graph != nullptr) *graph = captured == nullptr ? nullptr : handleOf(captured);
  return error;
}

cudaError_t updateStreamCaptureDependencies(cudaStream_t stream, DefaultStream spelling,
                                            cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edgeData,
                                            size_t count, unsigned flags) {
  if (edgeData != nullptr) return cudaErrorNotSupported;
  std::vector<Node*> list;
  if (cudaError_t error = dependencyList(dependencies, count, &list); error != cudaSuccess) return error;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  return updateCaptureDependencies(token, list, flags);
}

cudaError_t setNodeWork(cudaGraphNode_t node, NodeKind kind, cudaError_t built, NodeWork work) {
  if (built != cudaSuccess) return built;
  return withNode(node, kind, [&](Node& target) {
    target.work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t setKernelNodeParams(cudaGraphNode_t node, const cudaKernelNodeParams* params) {
  KernelWork work;
  if (cudaError_t error = kernelWork(params, &work); error != cudaSuccess) return error;
  return withNode(node, NodeKind::kKernel, [&](Node& kernel) {
    const KernelWork& old = std::get<KernelWork>(kernel.work);
    work.attributes = old.attributes;
    work.cooperative = old.cooperative;
    kernel.work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t nodeWork(cudaGraphNode_t node, NodeKind kind, NodeWork* work) {
  if (work == nullptr) return cudaErrorInvalidValue;
  return withNode(node, kind, [&](Node& target) {
    *work = copyWork(target.work);
    return cudaSuccess;
  });
}

cudaError_t kernelNodeParams(cudaGraphNode_t node, cudaKernelNodeParams* params) {
  if (params == nullptr) return cudaErrorInvalidValue;
  return withNode(node, NodeKind::kKernel, [&](Node& kernel) {
    *params = kernelParams(std::get<KernelWork>(kernel.work));
    return cudaSuccess;
  });
}

cudaError_t setEventNodeEvent(cudaGraphNode_t node, NodeKind kind, cudaEvent_t event) {
  EventWork work;
  const cudaError_t built = eventWork(event, &work);
  return setNodeWork(node, kind, built, work);
}

cudaError_t eventNodeEvent(cudaGraphNode_t node, NodeKind kind, cudaEvent_t* event) {
  if (event == nullptr) return cudaErrorInvalidValue;
  return withNode(node, kind, [&](Node& target) {
    *event = reinterpret_cast<cudaEvent_t>(std::get<EventWork>(target.work).event);
    return cudaSuccess;
  });
}

cudaError_t childGraphOf(cudaGraphNode_t node, cudaGraph_t* graph) {
  if (graph == nullptr) return cudaErrorInvalidValue;
  return withNode(node, NodeKind::kChildGraph, [&](Node& child) {
    *graph = handleOf(std::get<ChildWork>(child.work).graph.get());
    return cudaSuccess;
  });
}

cudaError_t setKernelNodeAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                   const cudaKernelNodeAttrValue* value) {
  if (value == nullptr) return cudaErrorInvalidValue;
  cudaLaunchAttribute attribute{};
  attribute.id = attr;
  std::memcpy(&attribute.val, value, sizeof attribute.val);
  LaunchAttributes read;
  if (cudaError_t error = readLaunchAttributes(&attribute, 1, &read); error != cudaSuccess) return error;
  std::lock_guard lock(graphMutex());
  KernelWork* kernel = kernelOf(node);
  if (kernel == nullptr) return cudaErrorInvalidValue;
  if (static_cast<int>(attr) == cudaLaunchAttributeCooperative) {
    kernel->cooperative = read.cooperative;
    return cudaSuccess;
  }
  auto& list = kernel->attributes;
  std::erase_if(list, [&](const LaunchAttributeValue& kept) { return kept.id == static_cast<int>(attr); });
  // An ignored attribute (cudaLaunchAttributeIgnore) reads as none.
  for (const LaunchAttributeValue& set : read.view()) list.push_back(set);
  return cudaSuccess;
}

// An attribute never set reads as zero, the driver's default for every attribute a node can hold.
cudaError_t kernelNodeAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                cudaKernelNodeAttrValue* value) {
  if (value == nullptr) return cudaErrorInvalidValue;
  std::lock_guard lock(graphMutex());
  const KernelWork* kernel = kernelOf(node);
  if (kernel == nullptr) return cudaErrorInvalidValue;
  CUlaunchAttributeValue read{};
  static_assert(sizeof read == sizeof *value);
  if (static_cast<int>(attr) == cudaLaunchAttributeCooperative) {
    read.cooperative = kernel->cooperative ? 1 : 0;
  } else {
    const auto found =
        std::find_if(kernel->attributes.begin(), kernel->attributes.end(),
                     [&](const LaunchAttributeValue& kept) { return kept.id == static_cast<int>(attr); });
    if (found != kernel->attributes.end()) launchAttributeValueOf(*found, &read);
  }
  std::memcpy(value, &read, sizeof read);
  return cudaSuccess;
}

cudaError_t copyKernelNodeAttributes(cudaGraphNode_t destination, cudaGraphNode_t source) {
  std::lock_guard lock(graphMutex());
  KernelWork* to = kernelOf(destination);
  const KernelWork* from = kernelOf(source);
  if (to == nullptr || from == nullptr) return cudaErrorInvalidValue;
  to->attributes = from->attributes;
  to->cooperative = from->cooperative;
  return cudaSuccess;
}

}  // namespace agileos::client::graph_api
