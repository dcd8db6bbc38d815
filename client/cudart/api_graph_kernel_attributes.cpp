// Kernel node attributes (cudart exports): cudaGraphKernelNodeSetAttribute, GetAttribute and
// CopyAttributes. A kernel node keeps its launch attributes as a captured cudaLaunchKernelEx does
// (KernelWork::attributes, the cooperative one as KernelWork::cooperative), and its launches send
// them like any launch's, where the worker checks each (an access policy window, for one, must lie
// in the client's memory). The calls are client/session/graph_api.h's, shared with the driver shim.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/graph_api.h"
#include "cudart_api.gen.h"  // checks the definitions against the declarations

using namespace agileos::client;
using namespace agileos::client::graph_api;

extern "C" {

cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue* value) {
  return recordError(setKernelNodeAttribute(hNode, attr, value));
}

cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            cudaKernelNodeAttrValue* value_out) {
  return recordError(kernelNodeAttribute(hNode, attr, value_out));
}

cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  return recordError(copyKernelNodeAttributes(hDst, hSrc));
}

}  // extern "C"
