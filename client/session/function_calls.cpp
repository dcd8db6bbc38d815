#include "client/session/function_calls.h"

#include <mutex>
#include <unordered_map>

#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

// A function's attributes as the worker last answered them, by function token. cuBLAS asks for
// them several times per GEMM; each answer is a round trip. They change only when this process
// sets one (setFunctionAttribute, setFunctionCacheConfig: the entry goes) and end with the module
// or the context (forgetFunctionAttributes: everything goes). The worker still checks every launch.
std::mutex gAttributesMutex;
auto& gAttributes = *new std::unordered_map<std::uint64_t, v1::FuncAttributes>();

void forgetAttributesOf(std::uint64_t function) {
  std::lock_guard lock(gAttributesMutex);
  gAttributes.erase(function);
}

}  // namespace

void forgetFunctionAttributes() {
  std::lock_guard lock(gAttributesMutex);
  gAttributes.clear();
}

bool rememberedDynamicSharedLimit(std::uint64_t function, std::uint64_t* bytes) {
  std::lock_guard lock(gAttributesMutex);
  auto it = gAttributes.find(function);
  if (it == gAttributes.end() || it->second.max_dynamic_shared_size_bytes() < 0) return false;
  *bytes = static_cast<std::uint64_t>(it->second.max_dynamic_shared_size_bytes());
  return true;
}

cudaError_t functionAttributes(std::uint64_t function, v1::FuncAttributes* attributes) {
  {
    std::lock_guard lock(gAttributesMutex);
    if (auto it = gAttributes.find(function); it != gAttributes.end()) {
      *attributes = it->second;
      return cudaSuccess;
    }
  }
  v1::CallRequest request;
  request.mutable_func_get_attributes()->set_function(function);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error != cudaSuccess) return error;
  *attributes = reply.func_attributes();
  std::lock_guard lock(gAttributesMutex);
  gAttributes[function] = reply.func_attributes();
  return cudaSuccess;
}

// The entry goes before the call and after it: an answer another thread fetched while the setting
// was on its way may be the old one.
cudaError_t setFunctionAttribute(std::uint64_t function, int attribute, int value) {
  forgetAttributesOf(function);
  v1::CallRequest request;
  auto* set = request.mutable_func_set_attribute();
  set->set_function(function);
  set->set_attribute(attribute);
  set->set_value(value);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  forgetAttributesOf(function);
  return error;
}

cudaError_t setFunctionCacheConfig(std::uint64_t function, int config) {
  forgetAttributesOf(function);
  v1::CallRequest request;
  request.mutable_func_set_cache_config()->set_function(function);
  request.mutable_func_set_cache_config()->set_config(config);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  forgetAttributesOf(function);
  return error;
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

// The largest size for which the worker's occupancy answer is at least `numBlocks`, found by
// bisection (occupancy only falls as the size grows) between 0 and the opt-in limit.
cudaError_t availableDynamicSharedMemory(std::uint64_t function, int numBlocks, int blockSize,
                                         std::uint64_t optInLimit, std::size_t* bytes) {
  const auto fits = [&](std::uint64_t size, bool* ok) {
    int blocks = 0;
    const cudaError_t error = maxActiveBlocksPerMultiprocessor(function, blockSize, size, 0, &blocks);
    *ok = error == cudaSuccess && blocks >= numBlocks;
    return error;
  };
  bool ok = false;
  if (cudaError_t error = fits(0, &ok); error != cudaSuccess) return error;
  if (!ok) {
    *bytes = 0;
    return cudaSuccess;
  }
  std::uint64_t low = 0, high = optInLimit;  // low fits
  while (low < high) {
    const std::uint64_t middle = low + (high - low + 1) / 2;
    // A size the driver calls invalid does not fit; any other failure (the connection, a sticky
    // fault) is the answer, never a smaller size.
    if (cudaError_t error = fits(middle, &ok); error != cudaSuccess && error != cudaErrorInvalidValue)
      return error;
    if (ok) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  *bytes = low;
  return cudaSuccess;
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
