// FakeGpuBackend's launch chains: the nodes are kept as packed launches, and a chain's launch
// records each of them in order, all or none, as a graph launch is.
#include <cstring>

#include "worker/testing/fake_gpu/fake_gpu_backend.h"

namespace agileos::worker {

bool FakeGpuBackend::chainNodeOf(const ChainedLaunch& launch, ChainNode* node) {
  const Function* live = liveFunction(launch.function, "chain node");
  if (live == nullptr) return false;
  node->function = launch.function;
  node->config = launch.config;
  node->config.attributes = {};
  std::size_t bufferSize = 0;
  for (const fake::PtxParam& param : live->params)
    bufferSize = std::max<std::size_t>(bufferSize, param.offset + param.size);
  node->params.assign(bufferSize, '\0');
  for (std::size_t i = 0; i < live->params.size(); ++i) {
    if (launch.params == nullptr || launch.params[i] == nullptr) return false;
    std::memcpy(node->params.data() + live->params[i].offset, launch.params[i], live->params[i].size);
  }
  return true;
}

CUresult FakeGpuBackend::chainCreate(std::span<const ChainedLaunch> launches, LaunchChainHandle* chain) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kChainCreate)) return *injected;
  if (launches.empty() || chain == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<ChainNode> nodes(launches.size());
  for (std::size_t i = 0; i < launches.size(); ++i) {
    if (!chainNodeOf(launches[i], &nodes[i])) return CUDA_ERROR_INVALID_VALUE;
  }
  *chain = nextObject_ += 0x10;
  chains_.emplace(*chain, std::move(nodes));
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::chainSetNode(LaunchChainHandle chain, std::size_t index,
                                      const ChainedLaunch& launch) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kChainSetNode)) return *injected;
  auto found = chains_.find(chain);
  if (found == chains_.end() || index >= found->second.size()) {
    misuse_.push_back("chainSetNode on an unknown chain or node " + hex(chain));
    return CUDA_ERROR_INVALID_VALUE;
  }
  ChainNode node;
  if (!chainNodeOf(launch, &node)) return CUDA_ERROR_INVALID_VALUE;
  found->second[index] = std::move(node);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::chainLaunch(LaunchChainHandle chain, CUstream stream) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kChainLaunch)) return *injected;
  auto found = chains_.find(chain);
  if (found == chains_.end()) {
    misuse_.push_back("chainLaunch of an unknown chain " + hex(chain));
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t before = launches_.size();
  for (ChainNode& node : found->second) {
    std::vector<void*> pointers;
    const Function* live = liveFunction(node.function, "chainLaunch");
    if (live == nullptr) {
      launches_.resize(before);
      return CUDA_ERROR_INVALID_HANDLE;
    }
    for (const fake::PtxParam& param : live->params) pointers.push_back(node.params.data() + param.offset);
    if (CUresult result = recordLaunch(node.function, node.config, stream, pointers.data(), false);
        result != CUDA_SUCCESS) {
      launches_.resize(before);
      return result;
    }
  }
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::chainDestroy(LaunchChainHandle chain) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kChainDestroy)) return *injected;
  if (chains_.erase(chain) == 0) {
    misuse_.push_back("chainDestroy of an unknown chain " + hex(chain));
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace agileos::worker
