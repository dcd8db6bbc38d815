#include "client/session/function_calls.h"

#include "client/session/worker_calls.h"

namespace agileos::client {

cudaError_t functionAttributes(std::uint64_t function, v1::FuncAttributes* attributes) {
  v1::CallRequest request;
  request.mutable_func_get_attributes()->set_function(function);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *attributes = reply.func_attributes();
  return error;
}

cudaError_t setFunctionAttribute(std::uint64_t function, int attribute, int value) {
  v1::CallRequest request;
  auto* set = request.mutable_func_set_attribute();
  set->set_function(function);
  set->set_attribute(attribute);
  set->set_value(value);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t setFunctionCacheConfig(std::uint64_t function, int config) {
  v1::CallRequest request;
  request.mutable_func_set_cache_config()->set_function(function);
  request.mutable_func_set_cache_config()->set_config(config);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t maxActiveBlocksPerMultiprocessor(std::uint64_t function, int blockSize,
                                             std::uint64_t dynamicSharedBytes, unsigned flags, int* blocks) {
  v1::CallRequest request;
  auto* query = request.mutable_occupancy_max_active_blocks();
  query->set_function(function);
  query->set_block_size(blockSize);
  query->set_dynamic_smem_bytes(dynamicSharedBytes);
  query->set_flags(flags);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *blocks = reply.block_count().num_blocks();
  return error;
}

cudaError_t clusterOccupancy(std::uint64_t function, const LaunchShape& shape, bool potentialSize,
                             int* value) {
  if (shape.sharedMem > UINT32_MAX) return cudaErrorInvalidValue;
  v1::CallRequest request;
  auto* query = request.mutable_occupancy_clusters();
  query->set_function(function);
  writeLaunchShape(shape, query);
  query->set_potential_size(potentialSize);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *value = reply.block_count().num_blocks();
  return error;
}

}  // namespace agileos::client
