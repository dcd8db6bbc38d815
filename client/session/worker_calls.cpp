#include "client/session/worker_calls.h"

#include <cstdio>
#include <mutex>

#include "client/common/log.h"
#include "client/session/call_tally.h"
#include "client/session/error_state.h"
#include "proto/wire/wire_operations.h"

namespace agileos::client {

cudaError_t toCudaError(ConnectionState state) {
  switch (state) {
    case ConnectionState::kConnected:
      return cudaSuccess;
    case ConnectionState::kNoDaemon:
      return cudaErrorNoDevice;
    case ConnectionState::kBusy:
    case ConnectionState::kLost:
      return cudaErrorDevicesUnavailable;
  }
  return cudaErrorUnknown;
}

cudaError_t absorbReply(const v1::CallRequest& request, const v1::CallReply& reply) {
  if (!reply.device_output().empty()) {
    std::fwrite(reply.device_output().data(), 1, reply.device_output().size(), stdout);
    std::fflush(stdout);
  }
  if (reply.error() != cudaSuccess && !reply.error_detail().empty()) {
    AGILEOS_LOG_INFO("worker refused call %d: %s", static_cast<int>(request.op_case()),
                     reply.error_detail().c_str());
  }
  const auto own = static_cast<cudaError_t>(reply.error());
  latchIfContextFatal(own);
  if (reply.deferred_error() == 0) return own;
  const auto deferred = static_cast<cudaError_t>(reply.deferred_error());
  AGILEOS_LOG_INFO("an asynchronous call failed with %d: %s", reply.deferred_error(),
                   reply.deferred_error_detail().c_str());
  recordError(deferred);
  return own == cudaSuccess && wire::deliversAsyncErrors(request) ? deferred : own;
}

cudaError_t invoke(const v1::CallRequest& request, v1::CallReply* reply) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  tallyCall(request.op_case(), /*waited=*/true);
  const ConnectionState state = Connection::instance().call(request, reply);
  if (state != ConnectionState::kConnected) return toCudaError(state);
  return absorbReply(request, *reply);
}

cudaError_t invokeStatusQuery(const v1::CallRequest& request, v1::CallReply* reply) {
  tallyCall(request.op_case(), /*waited=*/true);
  const ConnectionState state = Connection::instance().call(request, reply);
  if (state != ConnectionState::kConnected) return toCudaError(state);
  return absorbReply(request, *reply);
}

cudaError_t invokeAsync(const v1::CallRequest& request) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (!wire::mayBeSentWithoutWaiting(request)) {  // the table says it must be waited for
    v1::CallReply reply;
    return invoke(request, &reply);
  }
  tallyCall(request.op_case(), /*waited=*/false);
  v1::CallReply reply;
  bool replied = false;
  const ConnectionState state = Connection::instance().send(request, &reply, &replied);
  if (state != ConnectionState::kConnected) return toCudaError(state);
  return replied ? absorbReply(request, reply) : cudaSuccess;
}

const v1::DeviceInfo* deviceInfo(cudaError_t* error) {
  static std::once_flag once;
  static v1::DeviceInfo* info = nullptr;
  static cudaError_t failure = cudaSuccess;
  std::call_once(once, [] {
    v1::CallRequest request;
    request.mutable_get_device_info();
    v1::CallReply reply;
    failure = invoke(request, &reply);
    if (failure != cudaSuccess) return;
    info = new v1::DeviceInfo(reply.device_info());
  });
  *error = failure;
  return info;
}

cudaError_t checkDeviceOrdinal(int device) {
  cudaError_t error = cudaSuccess;
  const v1::DeviceInfo* info = deviceInfo(&error);
  if (info == nullptr) return error;
  return device >= 0 && device < info->device_count() ? cudaSuccess : cudaErrorInvalidDevice;
}

}  // namespace agileos::client
