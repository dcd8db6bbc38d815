// CUDA graphs: executable graphs and their launch (cudart exports). A launch makes the nodes'
// calls on the launch stream (client/session/graph_launch.h), each validated by the worker as
// it arrives.
#include <cuda_runtime_api.h>

#include <mutex>

#include "client/cudart/graph_params.h"
#include "client/session/error_state.h"
#include "client/session/graph.h"
#include "client/session/graph_launch.h"
#include "client/session/streams.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
using namespace agileos::client::cudart_graphs;

namespace {

ExecutableGraph* executableOf(cudaGraphExec_t exec) { return reinterpret_cast<ExecutableGraph*>(exec); }

// The flags CUDA defines for instantiation. Upload and device launch have nothing to do here
// (nodes are made on the client; a device-side launch is not offered): they are refused.
constexpr unsigned long long kKnownInstantiateFlags =
    cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority;

cudaError_t instantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  if (pGraphExec == nullptr) return cudaErrorInvalidValue;
  if ((flags & ~kKnownInstantiateFlags) != 0) return cudaErrorNotSupported;
  ExecutableGraph* executable = nullptr;
  if (cudaError_t error = instantiateLiveGraph(graphOf(graph), flags, &executable); error != cudaSuccess) {
    return error;
  }
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(executable);
  return cudaSuccess;
}

// Runs `body` on a live executable graph with its mutex held and graphMutex() free (the lock
// order graph_launch.h states).
template <typename Body>
cudaError_t withExecutable(cudaGraphExec_t exec, Body body) {
  ExecutableGraph* executable = executableOf(exec);
  {
    std::lock_guard lock(graphMutex());
    if (!isLiveExecutable(executable)) return recordError(cudaErrorInvalidValue);
  }
  std::lock_guard lock(executable->mutex);
  return recordError(body(*executable));
}

// Replaces the work of the executable node made from `node` (of the given kind).
cudaError_t setExecutableWork(cudaGraphExec_t exec, cudaGraphNode_t node, NodeKind kind, NodeWork work) {
  return withExecutable(exec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(node));
    if (target == nullptr || target->kind != kind) return cudaErrorInvalidValue;
    target->work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t launch(cudaGraphExec_t exec, cudaStream_t stream, DefaultStream spelling) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  return recordError(launchLiveExecutable(executableOf(exec), token));
}

// cudaGraphUpload: there is nothing to upload ahead of a launch; the handles are checked.
cudaError_t upload(cudaGraphExec_t exec, cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  if (token != 0 && !isKnownStream(token)) return recordError(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(graphMutex());
  if (!isLiveExecutable(executableOf(exec))) return recordError(cudaErrorInvalidValue);
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return recordError(instantiate(pGraphExec, graph, flags));
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return recordError(instantiate(pGraphExec, graph, flags));
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* instantiateParams) {
  if (instantiateParams == nullptr) return recordError(cudaErrorInvalidValue);
  instantiateParams->errNode_out = nullptr;
  const cudaError_t error = instantiate(pGraphExec, graph, instantiateParams->flags);
  instantiateParams->result_out =
      error == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  return recordError(error);
}

cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams* instantiateParams) {
  return cudaGraphInstantiateWithParams(pGraphExec, graph, instantiateParams);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  return recordError(destroyLiveExecutable(executableOf(graphExec)));
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  if (flags == nullptr) return recordError(cudaErrorInvalidValue);
  return withExecutable(graphExec, [&](ExecutableGraph& executable) {
    *flags = executable.flags;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return launch(graphExec, stream, DefaultStream::kLegacy);
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return launch(graphExec, stream, DefaultStream::kPerThread);
}

cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return upload(graphExec, stream, DefaultStream::kLegacy);
}
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return upload(graphExec, stream, DefaultStream::kPerThread);
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo* resultInfo) {
  if (resultInfo == nullptr) return recordError(cudaErrorInvalidValue);
  *resultInfo = cudaGraphExecUpdateResultInfo{};
  ExecutableGraph* executable = executableOf(hGraphExec);
  std::vector<ExecutableNode> nodes;
  {
    std::lock_guard lock(graphMutex());
    Graph* graph = graphOf(hGraph);
    if (!isLiveExecutable(executable) || !isLiveGraph(graph)) return recordError(cudaErrorInvalidValue);
    if (!flattenGraph(*graph, &nodes)) {
      resultInfo->result = cudaGraphExecUpdateErrorTopologyChanged;
      return recordError(cudaErrorGraphExecUpdateFailure);
    }
  }
  cudaGraphExecUpdateResult result = cudaGraphExecUpdateSuccess;
  const Node* errorNode = nullptr;
  const cudaError_t error = updateExecutable(*executable, std::move(nodes), &result, &errorNode);
  resultInfo->result = result;
  resultInfo->errorNode = handleOf(const_cast<Node*>(errorNode));
  return recordError(error);
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams* pNodeParams) {
  KernelWork work;
  if (cudaError_t error = kernelWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  // The node keeps its launch attributes, as natively.
  return withExecutable(hGraphExec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(node));
    if (target == nullptr || target->kind != NodeKind::kKernel) return cudaErrorInvalidValue;
    const KernelWork& old = std::get<KernelWork>(target->work);
    work.attributes = old.attributes;
    work.cooperative = old.cooperative;
    target->work = std::move(work);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaMemcpy3DParms* pNodeParams) {
  CopyWork work;
  if (cudaError_t error = copyWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  return setExecutableWork(hGraphExec, node, NodeKind::kMemcpy, work);
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void* dst,
                                               const void* src, size_t count, enum cudaMemcpyKind kind) {
  CopyWork work;
  if (cudaError_t error = copyWork1D(dst, src, count, kind, &work); error != cudaSuccess)
    return recordError(error);
  return setExecutableWork(hGraphExec, node, NodeKind::kMemcpy, work);
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaMemsetParams* pNodeParams) {
  FillWork work;
  if (cudaError_t error = fillWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  return setExecutableWork(hGraphExec, node, NodeKind::kMemset, work);
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                           const struct cudaHostNodeParams* pNodeParams) {
  HostWork work;
  if (cudaError_t error = hostWork(pNodeParams, &work); error != cudaSuccess) return recordError(error);
  return setExecutableWork(hGraphExec, node, NodeKind::kHost, work);
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                 cudaEvent_t event) {
  if (event == nullptr || !isLiveEvent(reinterpret_cast<std::uint64_t>(event))) {
    return recordError(cudaErrorInvalidResourceHandle);
  }
  return setExecutableWork(hGraphExec, hNode, NodeKind::kEventRecord,
                           EventWork{reinterpret_cast<std::uint64_t>(event)});
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                               cudaEvent_t event) {
  if (event == nullptr || !isLiveEvent(reinterpret_cast<std::uint64_t>(event))) {
    return recordError(cudaErrorInvalidResourceHandle);
  }
  return setExecutableWork(hGraphExec, hNode, NodeKind::kEventWait,
                           EventWork{reinterpret_cast<std::uint64_t>(event)});
}

cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int isEnabled) {
  return withExecutable(hGraphExec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(hNode));
    if (target == nullptr) return cudaErrorInvalidValue;
    // CUDA allows it for kernel, memcpy and memset nodes only.
    if (target->kind != NodeKind::kKernel && target->kind != NodeKind::kMemcpy &&
        target->kind != NodeKind::kMemset) {
      return cudaErrorInvalidValue;
    }
    target->enabled = isEnabled != 0;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int* isEnabled) {
  if (isEnabled == nullptr) return recordError(cudaErrorInvalidValue);
  return withExecutable(hGraphExec, [&](ExecutableGraph& executable) {
    ExecutableNode* target = findExecutableNode(executable, nodeOf(hNode));
    if (target == nullptr) return cudaErrorInvalidValue;
    *isEnabled = target->enabled ? 1 : 0;
    return cudaSuccess;
  });
}

}  // extern "C"
