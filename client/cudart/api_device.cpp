// Device management (cudart exports). Device queries are answered from the
// description the worker sent once; synchronization, reset and limits go to
// the worker.
#include <cuda_runtime_api.h>

#include "cudart_extra_prototypes.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

#include <atomic>

#include "client/cudart/device_properties.h"
#include "client/cudart/error_state.h"
#include "client/cudart/runtime.h"
#include "client/cudart/streams.h"

using namespace agileos::client;

namespace {

std::atomic<unsigned> gDeviceFlags{0};

// The device description, or the error that prevents having one.
cudaError_t requireDevice(int device, const agileos::v1::DeviceInfo** info) {
  cudaError_t error = cudaSuccess;
  *info = deviceInfo(&error);
  if (*info == nullptr) return error;
  if (device < 0 || device >= (*info)->device_count()) return cudaErrorInvalidDevice;
  return cudaSuccess;
}

cudaError_t simpleCall(agileos::v1::CallRequest& request) {
  agileos::v1::CallReply reply;
  return recordError(invoke(request, &reply));
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return recordError(cudaErrorInvalidValue);
  cudaError_t error = cudaSuccess;
  const agileos::v1::DeviceInfo* info = deviceInfo(&error);
  *count = info != nullptr ? info->device_count() : 0;
  return recordError(error);
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return recordError(cudaErrorInvalidValue);
  *device = 0;  // a worker serves one device, always ordinal 0 for its clients
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  const agileos::v1::DeviceInfo* info = nullptr;
  return recordError(requireDevice(device, &info));
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  const agileos::v1::DeviceInfo* info = nullptr;
  return recordError(requireDevice(device, &info));
}

cudaError_t cudaChooseDevice(int* device, const struct cudaDeviceProp* prop) {
  if (device == nullptr || prop == nullptr) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(0, &info); error != cudaSuccess) return recordError(error);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  fillDeviceProperties(*info, prop);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr) return recordError(cudaErrorInvalidValue);
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(device, &info); error != cudaSuccess) return recordError(error);
  std::optional<int> found = findAttribute(*info, attr);
  if (!found) return recordError(cudaErrorInvalidValue);
  *value = *found;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  const agileos::v1::DeviceInfo* info = nullptr;
  if (cudaError_t error = requireDevice(0, &info); error != cudaSuccess) return recordError(error);
  if (leastPriority != nullptr) *leastPriority = info->least_stream_priority();
  if (greatestPriority != nullptr) *greatestPriority = info->greatest_stream_priority();
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return recordError(cudaErrorInvalidValue);
  cudaError_t error = cudaSuccess;
  const agileos::v1::DeviceInfo* info = deviceInfo(&error);
  // As with no driver installed: version 0, and no error.
  *driverVersion = info != nullptr ? info->driver_version() : 0;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return recordError(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

// Scheduling flags describe how a host thread waits for the GPU; under AgileOS
// the waiting happens in the worker, so the flags are kept for cudaGetDeviceFlags
// and otherwise have no effect.
cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  constexpr unsigned kKnown = cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax |
                              cudaDeviceSyncMemops;
  if ((flags & ~kKnown) != 0) return recordError(cudaErrorInvalidValue);
  gDeviceFlags = flags;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return recordError(cudaErrorInvalidValue);
  *flags = gDeviceFlags.load();
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  agileos::v1::CallRequest request;
  request.mutable_device_synchronize();
  return simpleCall(request);
}

cudaError_t cudaDeviceReset(void) {
  agileos::v1::CallRequest request;
  request.mutable_device_reset();
  cudaError_t error = simpleCall(request);
  if (error == cudaSuccess) forgetAllStreams();
  return error;
}

cudaError_t cudaDeviceGetLimit(size_t* pValue, enum cudaLimit limit) {
  if (pValue == nullptr) return recordError(cudaErrorInvalidValue);
  agileos::v1::CallRequest request;
  request.mutable_device_get_limit()->set_limit(limit);
  agileos::v1::CallReply reply;
  cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) *pValue = reply.limit_value().value();
  return recordError(error);
}

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  agileos::v1::CallRequest request;
  request.mutable_device_set_limit()->set_limit(limit);
  request.mutable_device_set_limit()->set_value(value);
  return simpleCall(request);
}

}  // extern "C"
