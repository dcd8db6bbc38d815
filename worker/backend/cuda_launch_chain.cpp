// CudaGpuBackend's launch chains (gpu_backend.h): a CUDA graph of kernel nodes in a line,
// instantiated once and re-parameterised node by node.
#include <memory>
#include <vector>

#include "worker/backend/cuda_gpu_backend.h"

namespace agileos::worker {
namespace {

struct CudaLaunchChain {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<CUgraphNode> nodes;

  ~CudaLaunchChain() {
    if (exec != nullptr) cuGraphExecDestroy(exec);
    if (graph != nullptr) cuGraphDestroy(graph);
  }
};

CUDA_KERNEL_NODE_PARAMS nodeParams(const ChainedLaunch& launch) {
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = launch.function;
  params.gridDimX = launch.config.gridX;
  params.gridDimY = launch.config.gridY;
  params.gridDimZ = launch.config.gridZ;
  params.blockDimX = launch.config.blockX;
  params.blockDimY = launch.config.blockY;
  params.blockDimZ = launch.config.blockZ;
  params.sharedMemBytes = launch.config.sharedMemBytes;
  params.kernelParams = launch.params;
  return params;
}

CudaLaunchChain* chainOf(LaunchChainHandle handle) { return reinterpret_cast<CudaLaunchChain*>(handle); }

}  // namespace

CUresult CudaGpuBackend::chainCreate(std::span<const ChainedLaunch> launches, LaunchChainHandle* chain) {
  if (CUresult bound = bindContext(); bound != CUDA_SUCCESS) return bound;
  if (launches.empty() || chain == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto built = std::make_unique<CudaLaunchChain>();
  if (CUresult result = cuGraphCreate(&built->graph, 0); result != CUDA_SUCCESS) return result;
  built->nodes.reserve(launches.size());
  for (const ChainedLaunch& launch : launches) {
    const CUDA_KERNEL_NODE_PARAMS params = nodeParams(launch);
    CUgraphNode node = nullptr;
    const bool first = built->nodes.empty();
    if (CUresult result = cuGraphAddKernelNode(&node, built->graph, first ? nullptr : &built->nodes.back(),
                                               first ? 0 : 1, &params);
        result != CUDA_SUCCESS) {
      return result;
    }
    built->nodes.push_back(node);
  }
  if (CUresult result = cuGraphInstantiate(&built->exec, built->graph, 0); result != CUDA_SUCCESS) {
    built->exec = nullptr;
    return result;
  }
  *chain = reinterpret_cast<LaunchChainHandle>(built.release());
  return CUDA_SUCCESS;
}

CUresult CudaGpuBackend::chainSetNode(LaunchChainHandle chain, std::size_t index,
                                      const ChainedLaunch& launch) {
  if (CUresult bound = bindContext(); bound != CUDA_SUCCESS) return bound;
  CudaLaunchChain* live = chainOf(chain);
  if (live == nullptr || index >= live->nodes.size()) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS params = nodeParams(launch);
  return cuGraphExecKernelNodeSetParams(live->exec, live->nodes[index], &params);
}

CUresult CudaGpuBackend::chainLaunch(LaunchChainHandle chain, CUstream stream) {
  if (CUresult bound = bindContext(); bound != CUDA_SUCCESS) return bound;
  CudaLaunchChain* live = chainOf(chain);
  if (live == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return cuGraphLaunch(live->exec, stream);
}

CUresult CudaGpuBackend::chainDestroy(LaunchChainHandle chain) {
  if (CUresult bound = bindContext(); bound != CUDA_SUCCESS) return bound;
  delete chainOf(chain);  // an exec still in flight is freed by the driver when it completes
  return CUDA_SUCCESS;
}

}  // namespace agileos::worker
