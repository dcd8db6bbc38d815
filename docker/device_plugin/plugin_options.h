// agileos-device-plugin's command line (docker/device_plugin/main.cpp): where the kubelet and the
// daemon are, what the plugin advertises and what Allocate hands a container.
#pragma once

#include <string>
#include <vector>

namespace agileos::device_plugin {

// What Allocate answers for a container (docs/kubernetes.md, "CDI or the plugin's edits").
enum class AllocateMode {
  kBoth,    // the CDI device name and the same edits spelled out, for runtimes without CDI
  kCdi,     // only the CDI device name (the runtime must have CDI enabled)
  kDirect,  // only the edits (envs and mounts)
};

struct PluginOptions {
  // The kubelet's device-plugin directory: kubelet.sock is there, and the plugin's own socket.
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  // The plugin's socket, a file name inside plugin_dir (RegisterRequest.endpoint).
  std::string endpoint = "agileos.sock";
  // agileosd's client socket: the defaults of scheduler/daemon_config.h (socket_path, runtime_dir).
  std::string daemon_socket = "/run/agileos/agileosd.sock";
  std::string runtime_dir = "/run/agileos";
  // The client shims, where cmake/AgileosInstall.cmake puts them under the prefix /usr/local.
  std::string shim_dir = "/usr/local/lib/agileos/shim";
  // The GPU ordinal the daemon's workers open (worker.device): the CDI device's name.
  int device = 0;
  // Devices advertised: how many containers may hold the resource at once (worker.max_workers).
  int slots = 4;
  // How often the daemon's socket and the kubelet's are looked at.
  int poll_interval_ms = 1000;
  AllocateMode allocate_mode = AllocateMode::kBoth;
  std::string log_level = "info";
  // Probe only: answer whether daemon_socket accepts a connection, and exit (the readiness and
  // liveness probes of agileosd's container, docker/kubernetes/agileos-daemonset.yaml).
  bool check_daemon = false;
};

// Parses argv into *options. Returns false with *exit_code set when the program must exit: 0 after
// --help, 2 for a flag that does not parse, 1 for values that cannot work (checkOptions); the
// error is printed.
bool parseOptions(int argc, char** argv, PluginOptions* options, int* exit_code);

// Every reason the options cannot work, empty when they can: relative paths, an endpoint that is
// not a plain file name, socket addresses longer than a unix socket address holds, slots out of
// [1, 1024], a negative device, a poll interval out of [10, 60000] ms.
std::vector<std::string> checkOptions(const PluginOptions& options);

}  // namespace agileos::device_plugin
