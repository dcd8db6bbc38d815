// The plugin's gRPC server: DevicePlugin on the unix socket <plugin dir>/<endpoint>.
#pragma once

#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "docker/device_plugin/device_plugin_service.h"
#include "docker/device_plugin/socket_identity.h"

namespace agileos::device_plugin {

class PluginServer {
 public:
  // Listens on options.plugin_dir/options.endpoint, replacing a socket file left there (by an
  // earlier run); anything else at that path is an error. nullptr with *error set on failure.
  static std::unique_ptr<PluginServer> start(const PluginOptions& options, const HealthState* health,
                                             std::string* error);
  // Ends the streams, shuts the server down and removes its socket file if it is still this
  // server's (not one a later server made at the same path).
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // True while the socket file at the path is the one this server listens on: false once the
  // kubelet removed it (then the kubelet cannot reach this server and it must be started anew).
  bool socketIntact() const;
  const std::string& path() const { return path_; }

 private:
  PluginServer(std::string path, std::unique_ptr<DevicePluginService> service);

  std::string path_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  SocketIdentity identity_;
};

}  // namespace agileos::device_plugin
