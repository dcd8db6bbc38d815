// agileos-device-plugin's life: keeps the DevicePlugin server up and registered with whichever
// kubelet is running, and the devices' health current, until asked to stop.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "docker/device_plugin/health_state.h"
#include "docker/device_plugin/kubelet_watch.h"
#include "docker/device_plugin/plugin_options.h"
#include "docker/device_plugin/plugin_server.h"
#include "docker/device_plugin/socket_identity.h"

namespace agileos::device_plugin {

class PluginRunner {
 public:
  explicit PluginRunner(PluginOptions options);

  // Every poll interval, in this order:
  //   1. the daemon's health: Healthy while its client socket accepts a connection;
  //   2. the server: started anew when its socket file is gone or replaced (a restarting kubelet
  //      clears the directory), which also forgets the registration;
  //   3. the registration: Register again whenever kubelet.sock was created since the last
  //      registration or is a socket other than the one registered with (a new kubelet), retried
  //      each interval until it succeeds.
  // Returns 0 after requestStop(), once the server is down and its socket removed.
  int run();
  // Thread-safe; run() returns within one interval.
  void requestStop();

 private:
  void step();
  bool waitInterval();  // false once a stop is requested

  const PluginOptions options_;
  HealthState health_;
  std::unique_ptr<PluginServer> server_;
  // The kubelet.sock the plugin registered through; nullopt while not registered.
  KubeletWatch kubelet_watch_;
  std::optional<SocketIdentity> registered_;
  std::optional<bool> last_health_;  // what was logged last
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
};

}  // namespace agileos::device_plugin
