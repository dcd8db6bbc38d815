#include "client/cudart/runtime.h"

#include <cstdio>
#include <mutex>

#include "client/common/log.h"
#include "client/cudart/error_state.h"

namespace agileos::client {

cudaError_t toCudaError(ConnectionState state) {
  switch (state) {
    case ConnectionState::kConnected: return cudaSuccess;
    case ConnectionState::kNoDaemon: return cudaErrorNoDevice;
    case ConnectionState::kBusy:
    case ConnectionState::kLost: return cudaErrorDevicesUnavailable;
  }
  return cudaErrorUnknown;
}

cudaError_t invoke(const v1::CallRequest& request, v1::CallReply* reply) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  const ConnectionState state = Connection::instance().call(request, reply);
  if (state != ConnectionState::kConnected) return toCudaError(state);
  if (!reply->device_output().empty()) {
    std::fwrite(reply->device_output().data(), 1, reply->device_output().size(), stdout);
    std::fflush(stdout);
  }
  if (reply->error() != cudaSuccess && !reply->error_detail().empty()) {
    AGILEOS_LOG_INFO("worker refused call %d: %s", static_cast<int>(request.op_case()),
                     reply->error_detail().c_str());
  }
  return static_cast<cudaError_t>(reply->error());
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


}  // namespace agileos::client
