// Kernel node attributes (cudart exports): cudaGraphKernelNodeSetAttribute, GetAttribute and
// CopyAttributes. A kernel node keeps its launch attributes as a captured cudaLaunchKernelEx does
// (KernelWork::attributes, the cooperative one as KernelWork::cooperative), and its launches send
// them like any launch's, where the worker checks each (an access policy window, for one, must lie
// in the client's memory). An attribute is read with the launch path's reader
// (readLaunchAttributes), so a node accepts exactly what a launch accepts; an id it does not pass
// on is cudaErrorNotSupported, logged once.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <variant>

#include "client/cudart/graph_params.h"
#include "client/session/error_state.h"
#include "client/session/graph.h"
#include "client/session/launch_attributes.h"
#include "cudart_api.gen.h"  // checks the definitions against the declarations

using namespace agileos::client;
using namespace agileos::client::cudart_graphs;

namespace {

// The kernel node behind `handle`, or null; the caller holds graphMutex().
KernelWork* kernelOf(cudaGraphNode_t handle) {
  Node* node = nodeOf(handle);
  if (!isLiveNode(node) || node->kind != NodeKind::kKernel) return nullptr;
  return &std::get<KernelWork>(node->work);
}

}  // namespace

extern "C" {

cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue* value) {
  if (value == nullptr) return recordError(cudaErrorInvalidValue);
  cudaLaunchAttribute attribute{};
  attribute.id = attr;
  std::memcpy(&attribute.val, value, sizeof attribute.val);
  LaunchAttributes read;
  if (cudaError_t error = readLaunchAttributes(&attribute, 1, &read); error != cudaSuccess)
    return recordError(error);
  std::lock_guard lock(graphMutex());
  KernelWork* kernel = kernelOf(hNode);
  if (kernel == nullptr) return recordError(cudaErrorInvalidValue);
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
cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            cudaKernelNodeAttrValue* value_out) {
  if (value_out == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(graphMutex());
  const KernelWork* kernel = kernelOf(hNode);
  if (kernel == nullptr) return recordError(cudaErrorInvalidValue);
  CUlaunchAttributeValue value{};
  static_assert(sizeof value == sizeof *value_out);
  if (static_cast<int>(attr) == cudaLaunchAttributeCooperative) {
    value.cooperative = kernel->cooperative ? 1 : 0;
  } else {
    const auto found =
        std::find_if(kernel->attributes.begin(), kernel->attributes.end(),
                     [&](const LaunchAttributeValue& kept) { return kept.id == static_cast<int>(attr); });
    if (found != kernel->attributes.end()) launchAttributeValueOf(*found, &value);
  }
  std::memcpy(value_out, &value, sizeof value);
  return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  std::lock_guard lock(graphMutex());
  KernelWork* destination = kernelOf(hDst);
  const KernelWork* source = kernelOf(hSrc);
  if (destination == nullptr || source == nullptr) return recordError(cudaErrorInvalidValue);
  destination->attributes = source->attributes;
  destination->cooperative = source->cooperative;
  return cudaSuccess;
}

}  // extern "C"
