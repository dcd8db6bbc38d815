// CUDA graphs: executable graphs and their launch (cudart exports). A launch makes the nodes'
// calls on the launch stream (client/session/graph_launch.h), each validated by the worker as
// it arrives. The calls are client/session/graph_api.h's, shared with the driver shim.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/graph_api.h"
#include "client/session/streams.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;
using namespace agileos::client::graph_api;

namespace {

cudaError_t launch(cudaGraphExec_t exec, cudaStream_t stream, DefaultStream spelling) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  return recordError(launchLiveExecutable(executableOf(exec), token));
}

cudaError_t upload(cudaGraphExec_t exec, cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess)
    return recordError(error);
  return recordError(uploadExecutable(exec, token));
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
  return recordError(instantiateWithResult(pGraphExec, graph, instantiateParams->flags,
                                           &instantiateParams->result_out, &instantiateParams->errNode_out));
}

cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams* instantiateParams) {
  return cudaGraphInstantiateWithParams(pGraphExec, graph, instantiateParams);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  return recordError(destroyLiveExecutable(executableOf(graphExec)));
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  return recordError(executableFlags(graphExec, flags));
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
  return recordError(updateExecutableGraph(hGraphExec, hGraph, resultInfo));
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams* pNodeParams) {
  return recordError(setExecutableKernelParams(hGraphExec, node, pNodeParams));
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaMemcpy3DParms* pNodeParams) {
  CopyWork work;
  const cudaError_t built = copyWork(pNodeParams, &work);
  return recordError(setExecutableNodeWork(hGraphExec, node, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void* dst,
                                               const void* src, size_t count, enum cudaMemcpyKind kind) {
  CopyWork work;
  const cudaError_t built = copyWork1D(dst, src, count, kind, &work);
  return recordError(setExecutableNodeWork(hGraphExec, node, NodeKind::kMemcpy, built, work));
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaMemsetParams* pNodeParams) {
  FillWork work;
  const cudaError_t built = fillWork(pNodeParams, &work);
  return recordError(setExecutableNodeWork(hGraphExec, node, NodeKind::kMemset, built, work));
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                           const struct cudaHostNodeParams* pNodeParams) {
  HostWork work;
  const cudaError_t built = hostWork(pNodeParams, &work);
  return recordError(setExecutableNodeWork(hGraphExec, node, NodeKind::kHost, built, work));
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                                 cudaEvent_t event) {
  return recordError(setExecutableEvent(hGraphExec, hNode, NodeKind::kEventRecord, event));
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                               cudaEvent_t event) {
  return recordError(setExecutableEvent(hGraphExec, hNode, NodeKind::kEventWait, event));
}

cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int isEnabled) {
  return recordError(setNodeEnabled(hGraphExec, hNode, isEnabled));
}

cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                    unsigned int* isEnabled) {
  return recordError(nodeEnabled(hGraphExec, hNode, isEnabled));
}

}  // extern "C"
