#include "docker/device_plugin/plugin_server.h"

#include <grpcpp/server_builder.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::device_plugin {

PluginServer::PluginServer(std::string path, std::unique_ptr<DevicePluginService> service)
    : path_(std::move(path)), service_(std::move(service)) {}

std::unique_ptr<PluginServer> PluginServer::start(const PluginOptions& options, const HealthState* health,
                                                  std::string* error) {
  const std::string path = options.plugin_dir + "/" + options.endpoint;
  if (::access(path.c_str(), F_OK) == 0) {
    if (!socketIdentity(path)) {
      *error = path + " exists and is not a socket; not replacing it";
      return nullptr;
    }
    if (::unlink(path.c_str()) != 0) {
      *error = "cannot remove the old socket " + path + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  std::unique_ptr<PluginServer> server(
      new PluginServer(path, std::make_unique<DevicePluginService>(options, health)));
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  const std::optional<SocketIdentity> identity = socketIdentity(path);
  if (server->server_ == nullptr || bound == 0 || !identity) {
    *error = "cannot listen on " + path;
    return nullptr;
  }
  server->identity_ = *identity;
  return server;
}

PluginServer::~PluginServer() {
  if (server_ == nullptr) return;
  service_->stop();
  // Calls still running after a second are cancelled; the streams end within their next wait.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  if (socketIntact()) ::unlink(path_.c_str());
}

bool PluginServer::socketIntact() const { return socketIdentity(path_) == identity_; }

}  // namespace agileos::device_plugin
