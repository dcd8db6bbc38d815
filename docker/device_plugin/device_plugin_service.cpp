#include "docker/device_plugin/device_plugin_service.h"

#include <spdlog/spdlog.h>

#include "docker/device_plugin/allocation.h"
#include "docker/device_plugin/devices.h"

namespace agileos::device_plugin {
namespace {

// How long a stream sleeps between looks at its cancellation and the server's stop.
constexpr std::chrono::milliseconds kStreamWait{200};

std::string joined(const v1beta1::AllocateRequest& request) {
  std::string text;
  for (const auto& container : request.container_requests()) {
    text += text.empty() ? "[" : " [";
    for (int i = 0; i < container.devices_ids_size(); ++i) text += (i ? " " : "") + container.devices_ids(i);
    text += "]";
  }
  return text;
}

}  // namespace

DevicePluginService::DevicePluginService(const PluginOptions& options, const HealthState* health)
    : options_(options),
      health_(health),
      ids_(deviceIds(options.device, options.slots)),
      known_(ids_.begin(), ids_.end()) {}

v1beta1::ListAndWatchResponse DevicePluginService::deviceList(bool healthy) const {
  v1beta1::ListAndWatchResponse response;
  for (const std::string& id : ids_) {
    v1beta1::Device* device = response.add_devices();
    device->set_id(id);
    device->set_health(healthy ? kHealthy : kUnhealthy);
  }
  return response;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(false);
  response->set_get_preferred_allocation_available(false);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                                               grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  HealthState::Snapshot sent = health_->get();
  if (!writer->Write(deviceList(sent.healthy))) return grpc::Status::OK;
  spdlog::info("ListAndWatch: {} devices sent, {}", ids_.size(), sent.healthy ? kHealthy : kUnhealthy);
  while (!stopping_ && !context->IsCancelled()) {
    const HealthState::Snapshot now = health_->waitForChange(sent.generation, kStreamWait);
    if (now.generation == sent.generation) continue;
    // Only the health flag is compared: a change and its reversal between two looks still send
    // the list again, which the kubelet takes as it is.
    if (!writer->Write(deviceList(now.healthy))) break;
    spdlog::info("ListAndWatch: devices now {}", now.healthy ? kHealthy : kUnhealthy);
    sent = now;
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  grpc::Status status = allocate(*request, known_, options_, response);
  if (status.ok())
    spdlog::info("Allocate {}: granted", joined(*request));
  else
    spdlog::warn("Allocate {}: refused: {}", joined(*request), status.error_message());
  return status;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

}  // namespace agileos::device_plugin
