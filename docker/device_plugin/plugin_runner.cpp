#include "docker/device_plugin/plugin_runner.h"

#include <spdlog/spdlog.h>

#include "docker/device_plugin/daemon_probe.h"
#include "docker/device_plugin/devices.h"
#include "docker/device_plugin/registration.h"

namespace agileos::device_plugin {
namespace {

// Register waits this long for the kubelet to answer (it dials the plugin back first).
constexpr std::chrono::milliseconds kRegisterTimeout{5000};

}  // namespace

PluginRunner::PluginRunner(PluginOptions options)
    : options_(std::move(options)), kubelet_watch_(options_.plugin_dir, "kubelet.sock") {}

void PluginRunner::step() {
  const bool healthy = daemonAcceptsConnections(options_.daemon_socket);
  if (healthy != last_health_)
    spdlog::info("agileosd at {}: {}", options_.daemon_socket,
                 healthy ? "accepting clients (Healthy)" : "not accepting clients (Unhealthy)");
  health_.set(healthy);
  last_health_ = healthy;

  if (server_ != nullptr && !server_->socketIntact()) {
    spdlog::warn("{} was removed or replaced (kubelet restart?); serving anew", server_->path());
    server_.reset();
  }
  if (server_ == nullptr) {
    registered_.reset();
    std::string error;
    server_ = PluginServer::start(options_, &health_, &error);
    if (server_ == nullptr) {
      spdlog::error("{}; retrying", error);
      return;
    }
    spdlog::info("serving {} {} on {}", options_.slots, kResourceName, server_->path());
  }

  const std::string kubelet = options_.plugin_dir + "/kubelet.sock";
  if (kubelet_watch_.created() && registered_) {
    spdlog::info("{} was created anew (kubelet restart); registering again", kubelet);
    registered_.reset();
  }
  const std::optional<SocketIdentity> current = socketIdentity(kubelet);
  if (!current) {
    if (registered_) spdlog::warn("{} is gone; waiting for the kubelet", kubelet);
    registered_.reset();
    return;
  }
  if (registered_ == current) return;
  std::string error;
  if (!registerWithKubelet(kubelet, options_, kRegisterTimeout, &error)) {
    spdlog::warn("{}; retrying", error);
    return;
  }
  registered_ = current;
  spdlog::info("registered {} with the kubelet at {} (endpoint {})", kResourceName, kubelet,
               options_.endpoint);
}

bool PluginRunner::waitInterval() {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, std::chrono::milliseconds(options_.poll_interval_ms), [this] { return stop_; });
  return !stop_;
}

int PluginRunner::run() {
  do {
    step();
  } while (waitInterval());
  server_.reset();
  spdlog::info("stopped");
  return 0;
}

void PluginRunner::requestStop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
}

}  // namespace agileos::device_plugin
