#include "docker/device_plugin/registration.h"

#include <grpcpp/grpcpp.h>

#include "docker/device_plugin/devices.h"
#include "kubelet/deviceplugin/v1beta1/api.grpc.pb.h"

namespace agileos::device_plugin {

bool registerWithKubelet(const std::string& kubelet_socket, const PluginOptions& options,
                         std::chrono::milliseconds timeout, std::string* error) {
  auto channel = grpc::CreateChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(options.endpoint);
  request.set_resource_name(kResourceName);
  request.mutable_options()->set_pre_start_required(false);
  request.mutable_options()->set_get_preferred_allocation_available(false);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  // Not wait_for_ready: a kubelet.sock that exists is bound and listening, so a failed connect
  // means a stale socket, and the runner retries at its next interval instead of blocking the
  // health checks until the deadline.
  v1beta1::Empty reply;
  const grpc::Status status = stub->Register(&context, request, &reply);
  if (!status.ok()) {
    *error = "Register on " + kubelet_socket + ": " + status.error_message() + " (code " +
             std::to_string(static_cast<int>(status.error_code())) + ")";
    return false;
  }
  return true;
}

}  // namespace agileos::device_plugin
