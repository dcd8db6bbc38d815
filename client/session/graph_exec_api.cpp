// Executable graphs through graph_api.h: instantiation, flags, upload, per-node changes and update.
#include <mutex>
#include <unordered_set>
#include <variant>
#include <vector>

#include "client/session/graph_api.h"
#include "client/session/streams.h"

namespace agileos::client::graph_api {
namespace {

constexpr unsigned long long kKnownInstantiateFlags =
    cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority;

// What an executable node's new work may not change, as natively (stop 39's probe_graph_update):
// a copy's direction (graph_launch.h), and a memset's dimensions (1D stays 1D, 2D stays 2D).
bool changesShape(const NodeWork& before, const NodeWork& after) {
  if (copyDirectionChanged(before, after)) return true;
  const auto* fillBefore = std::get_if<FillWork>(&before);
  const auto* fillAfter = std::get_if<FillWork>(&after);
  if (fillBefore != nullptr && fillAfter != nullptr)
    return (fillBefore->height > 1) != (fillAfter->height > 1);
  return false;
}

}  // namespace

cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (exec == nullptr) return cudaErrorInvalidValue;
  if ((flags & ~kKnownInstantiateFlags) != 0) return cudaErrorNotSupported;
  ExecutableGraph* executable = nullptr;
  if (cudaError_t error = instantiateLiveGraph(graphOf(graph), flags, &executable); error != cudaSuccess)
    return error;
  *exec = handleOf(executable);
  return cudaSuccess;
}

cudaError_t instantiateWithResult(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags,
                                  cudaGraphInstantiateResult* result, cudaGraphNode_t* errorNode) {
  *errorNode = nullptr;
  const cudaError_t error = instantiate(exec, graph, flags);
  *result = error == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  if (error == cudaSuccess) return error;
  std::lock_guard lock(graphMutex());
  const Graph* source = graphOf(graph);
  std::vector<const Node*> order;
  if (isLiveGraph(source) && !source->topologicalOrder(&order)) {
    const std::unordered_set<const Node*> ordered(order.begin(), order.end());
    for (const auto& node : source->nodes()) {
      if (ordered.contains(node.get())) continue;
      *result = cudaGraphInstantiateInvalidStructure;
      *errorNode = handleOf(node.get());
      break;
    }
  }
  return error;
}

cudaError_t executableFlags(cudaGraphExec_t exec, unsigned long long* flags) {
  if (flags == nullptr) return cudaErrorInvalidValue;
  return withExecutable(exec, [&](ExecutableGraph& executable) {
    *flags = executable.flags;
    return cudaSuccess;
  });
}

cudaError_t uploadExecutable(cudaGraphExec_t exec, std::uint64_t stream) {
  if (stream != 0 && !isKnownStream(stream)) return cudaErrorInvalidResourceHandle;
  std::lock_guard lock(graphMutex());
  return isLiveExecutable(executableOf(exec)) ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t setExecutableNodeWork(cudaGraphExec_t exec, cudaGraphNode_t node, NodeKind kind,
                                  cudaError_t built, NodeWork work) {
  if (built != cudaSuccess) return built;
  return withExecutable(exec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(node));
    if (target == nullptr || target->kind != kind || changesShape(target->work, work))
      return cudaErrorInvalidValue;
    target->work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t setExecutableKernelParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                      const cudaKernelNodeParams* params) {
  KernelWork work;
  if (cudaError_t error = kernelWork(params, &work); error != cudaSuccess) return error;
  // The node keeps its launch attributes, as natively.
  return withExecutable(exec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(node));
    if (target == nullptr || target->kind != NodeKind::kKernel) return cudaErrorInvalidValue;
    const KernelWork& old = std::get<KernelWork>(target->work);
    work.attributes = old.attributes;
    work.cooperative = old.cooperative;
    target->work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t setExecutableEvent(cudaGraphExec_t exec, cudaGraphNode_t node, NodeKind kind, cudaEvent_t event) {
  EventWork work;
  const cudaError_t built = eventWork(event, &work);
  return setExecutableNodeWork(exec, node, kind, built, work);
}

cudaError_t updateExecutableGraph(cudaGraphExec_t exec, cudaGraph_t graph,
                                  cudaGraphExecUpdateResultInfo* info) {
  *info = cudaGraphExecUpdateResultInfo{};
  ExecutableGraph* executable = executableOf(exec);
  std::vector<ExecutableNode> nodes;
  {
    std::lock_guard lock(graphMutex());
    Graph* source = graphOf(graph);
    if (!isLiveExecutable(executable) || !isLiveGraph(source)) return cudaErrorInvalidValue;
    if (!flattenGraph(*source, &nodes)) {
      info->result = cudaGraphExecUpdateErrorTopologyChanged;
      return cudaErrorGraphExecUpdateFailure;
    }
  }
  cudaGraphExecUpdateResult result = cudaGraphExecUpdateSuccess;
  const Node* errorNode = nullptr;
  const cudaError_t error = updateExecutable(*executable, std::move(nodes), &result, &errorNode);
  info->result = result;
  info->errorNode = handleOf(const_cast<Node*>(errorNode));
  return error;
}

// CUDA lets kernel, memcpy and memset nodes be enabled and disabled, and answers for those only.
static bool mayBeDisabled(NodeKind kind) {
  return kind == NodeKind::kKernel || kind == NodeKind::kMemcpy || kind == NodeKind::kMemset;
}

cudaError_t setNodeEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned enabled) {
  return withExecutable(exec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(node));
    if (target == nullptr || !mayBeDisabled(target->kind)) return cudaErrorInvalidValue;
    target->enabled = enabled != 0;
    return cudaSuccess;
  });
}

cudaError_t nodeEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned* enabled) {
  if (enabled == nullptr) return cudaErrorInvalidValue;
  return withExecutable(exec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(node));
    // A host node's state is not asked natively either (cudaErrorInvalidValue, stop 39's probe).
    if (target == nullptr || !mayBeDisabled(target->kind)) return cudaErrorInvalidValue;
    *enabled = target->enabled ? 1 : 0;
    return cudaSuccess;
  });
}

}  // namespace agileos::client::graph_api
