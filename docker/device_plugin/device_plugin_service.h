// The DevicePlugin service (kubelet Device Plugin API v1beta1) the kubelet calls on the plugin's
// socket after Register: the device list and its health (ListAndWatch), and Allocate.
#pragma once

#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "docker/device_plugin/health_state.h"
#include "docker/device_plugin/plugin_options.h"
#include "kubelet/deviceplugin/v1beta1/api.grpc.pb.h"

namespace agileos::device_plugin {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // `health` outlives the service.
  DevicePluginService(const PluginOptions& options, const HealthState* health);

  // Ends every ListAndWatch stream (within one wait of them): called before the server shuts
  // down, so Shutdown does not wait on streams that never end by themselves.
  void stop() { stopping_ = true; }

  // Neither PreStartContainer nor GetPreferredAllocation is needed (both options false).
  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  // Sends every device with the daemon's health at once, then again each time it changes, until
  // the kubelet goes away or the server stops.
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  v1beta1::ListAndWatchResponse deviceList(bool healthy) const;

  const PluginOptions options_;
  const HealthState* health_;
  const std::vector<std::string> ids_;
  const std::set<std::string> known_;
  std::atomic<bool> stopping_{false};
};

}  // namespace agileos::device_plugin
