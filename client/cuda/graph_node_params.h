// The driver API's graph node structures (CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D,
// CUDA_MEMSET_NODE_PARAMS, CUDA_HOST_NODE_PARAMS) to and from the runtime's (untrusted side). The
// driver shim converts what the program passes to the runtime's form and then makes the same
// session call the runtime shim makes (client/session/graph_api.h), so that a node is checked by
// one piece of code whichever API made it. Each conversion checks what only the driver's form has
// (a context, memory types); the runtime's checks follow in the session.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "client/session/graph.h"

namespace agileos::client::cuda_shim {

// A context argument of a node: null (the current one) or a live context of the process
// (cudaErrorDeviceUninitialized otherwise: the runtime's "invalid device context", 201, which is
// CUDA_ERROR_INVALID_CONTEXT).
cudaError_t nodeContext(CUcontext context);

// The kernel is `func`, or `kern` where `func` is null (CUDA_KERNEL_NODE_PARAMS_v2 and later).
cudaError_t runtimeKernelParams(const CUDA_KERNEL_NODE_PARAMS_v1* params, cudaKernelNodeParams* out);
cudaError_t runtimeKernelParams(const CUDA_KERNEL_NODE_PARAMS* params, cudaKernelNodeParams* out);
void driverKernelParams(const cudaKernelNodeParams& params, CUDA_KERNEL_NODE_PARAMS_v1* out);
// The later form names the kernel as both `func` and `kern` (one handle here).
void driverKernelParams(const cudaKernelNodeParams& params, CUDA_KERNEL_NODE_PARAMS* out);

// Linear memory only, as the runtime's copy nodes: a copy naming an array is cudaErrorNotSupported,
// and so is one of several slices that do not follow each other. `context` as nodeContext.
cudaError_t copyNodeWork(const CUDA_MEMCPY3D* copy, CUcontext context, CopyWork* work);
CUDA_MEMCPY3D driverCopyParams(const CopyWork& work);

// The node work of a memset (checked as the runtime's, graph_node_params.h's fillWork) on the node's
// context, and of a host function.
cudaError_t fillNodeWork(const CUDA_MEMSET_NODE_PARAMS* params, CUcontext context, FillWork* work);
CUDA_MEMSET_NODE_PARAMS driverMemsetParams(const FillWork& work);
cudaError_t hostNodeWork(const CUDA_HOST_NODE_PARAMS* params, HostWork* work);
CUDA_HOST_NODE_PARAMS driverHostParams(const HostWork& work);

}  // namespace agileos::client::cuda_shim
