#include "client/session/context_calls.h"

#include "agileos/v1/client_api.pb.h"
#include "client/session/array_registry.h"
#include "client/session/device_allocations.h"
#include "client/session/function_calls.h"
#include "client/session/graph_memory.h"
#include "client/session/memory_pools.h"
#include "client/session/resource_epoch.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"

namespace agileos::client {

cudaError_t synchronizeDevice() {
  v1::CallRequest request;
  request.mutable_device_synchronize();
  v1::CallReply reply;
  const std::uint64_t mark = workMark();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) noteDeviceIdle(mark);
  return error;
}

cudaError_t resetDevice() {
  v1::CallRequest request;
  request.mutable_device_reset();
  v1::CallReply reply;
  noteResourcesReleased();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) {
    forgetAllStreams();
    forgetAllDeviceAllocations();
    forgetAllMemoryPools();
    forgetAllGraphAllocations();
    ArrayRegistry::instance().forgetAll();
  }
  forgetFunctionAttributes();
  return error;
}

cudaError_t contextLimit(int limit, std::uint64_t* value) {
  v1::CallRequest request;
  request.mutable_device_get_limit()->set_limit(limit);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *value = reply.limit_value().value();
  return error;
}

cudaError_t setContextLimit(int limit, std::uint64_t value) {
  v1::CallRequest request;
  request.mutable_device_set_limit()->set_limit(limit);
  request.mutable_device_set_limit()->set_value(value);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t resetPersistingL2Cache() {
  v1::CallRequest request;
  request.mutable_reset_persisting_l2_cache();
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t contextCacheConfig(int* config) {
  v1::CallRequest request;
  request.mutable_device_get_cache_config();
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *config = reply.cache_config().config();
  return error;
}

cudaError_t setContextCacheConfig(int config) {
  v1::CallRequest request;
  request.mutable_device_set_cache_config()->set_config(config);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t checkSharedMemBankSetting(int config) {
  return config == cudaSharedMemBankSizeDefault || config == cudaSharedMemBankSizeFourByte ||
                 config == cudaSharedMemBankSizeEightByte
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

}  // namespace agileos::client
