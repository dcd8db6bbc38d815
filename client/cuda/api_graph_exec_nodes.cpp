// Changing an executable graph through the driver API (libcuda.so.1 exports): a node's parameters,
// events and enabled state, the graph's flags, and cuGraphExecUpdate. As api_graph_nodes.cpp, each
// converts the driver's structures and makes the runtime shim's call (client/session/graph_api.h).
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "client/cuda/driver_call.h"
#include "client/cuda/graph_node_params.h"
#include "client/session/graph_api.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;
namespace api = agileos::client::graph_api;

namespace {

static_assert(sizeof(CUgraphExecUpdateResultInfo) == sizeof(cudaGraphExecUpdateResultInfo) &&
              int(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED) ==
                  int(cudaGraphExecUpdateErrorTopologyChanged));

CUresult driver(cudaError_t error) { return toDriverResult(error); }

CUresult setKernel(CUgraphExec exec, CUgraphNode node, cudaError_t converted,
                   const cudaKernelNodeParams& params) {
  if (converted != cudaSuccess) return driver(converted);
  return driver(api::setExecutableKernelParams(exec, node, &params));
}

}  // namespace

extern "C" {

CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long read = 0;
  if (cudaError_t error = api::executableFlags(hGraphExec, &read); error != cudaSuccess) return driver(error);
  *flags = read;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  cudaKernelNodeParams params{};
  const cudaError_t converted = runtimeKernelParams(nodeParams, &params);
  return setKernel(hGraphExec, hNode, converted, params);
}
CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  cudaKernelNodeParams params{};
  const cudaError_t converted = runtimeKernelParams(nodeParams, &params);
  return setKernel(hGraphExec, hNode, converted, params);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  CopyWork work;
  const cudaError_t built = copyNodeWork(copyParams, ctx, &work);
  return driver(api::setExecutableNodeWork(hGraphExec, hNode, NodeKind::kMemcpy, built, work));
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  FillWork work;
  const cudaError_t built = fillNodeWork(memsetParams, ctx, &work);
  return driver(api::setExecutableNodeWork(hGraphExec, hNode, NodeKind::kMemset, built, work));
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      const CUDA_HOST_NODE_PARAMS* nodeParams) {
  HostWork work;
  const cudaError_t built = hostNodeWork(nodeParams, &work);
  return driver(api::setExecutableNodeWork(hGraphExec, hNode, NodeKind::kHost, built, work));
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  return driver(api::setExecutableEvent(hGraphExec, hNode, NodeKind::kEventRecord, event));
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  return driver(api::setExecutableEvent(hGraphExec, hNode, NodeKind::kEventWait, event));
}

CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
  return driver(api::setNodeEnabled(hGraphExec, hNode, isEnabled));
}

CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled) {
  return driver(api::nodeEnabled(hGraphExec, hNode, isEnabled));
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo* resultInfo) {
  if (resultInfo == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t error = api::updateExecutableGraph(hGraphExec, hGraph, &info);
  std::memcpy(resultInfo, &info, sizeof info);
  return driver(error);
}

// The first form (CUDA 11.0): the error node and the result through two pointers.
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                           CUgraphExecUpdateResult* updateResult_out) {
  if (hErrorNode_out == nullptr || updateResult_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t error = api::updateExecutableGraph(hGraphExec, hGraph, &info);
  *hErrorNode_out = info.errorNode;
  *updateResult_out = static_cast<CUgraphExecUpdateResult>(info.result);
  return driver(error);
}

}  // extern "C"
