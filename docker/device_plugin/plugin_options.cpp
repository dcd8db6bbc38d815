#include "docker/device_plugin/plugin_options.h"

#include <sys/un.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

namespace agileos::device_plugin {
namespace {

// sun_path holds this many bytes and a terminating NUL.
constexpr std::size_t kMaxSocketPathBytes = sizeof(sockaddr_un{}.sun_path) - 1;

bool absolute(const std::string& path) { return !path.empty() && path.front() == '/'; }

void checkSocketPath(const std::string& flag, const std::string& path, std::vector<std::string>* errors) {
  if (path.size() > kMaxSocketPathBytes)
    errors->push_back(flag + ": " + path + " is " + std::to_string(path.size()) + " bytes; at most " +
                      std::to_string(kMaxSocketPathBytes) + " fit in a unix socket address");
}

}  // namespace

std::vector<std::string> checkOptions(const PluginOptions& options) {
  std::vector<std::string> errors;
  const std::pair<const char*, const std::string*> paths[] = {{"--plugin-dir", &options.plugin_dir},
                                                              {"--daemon-socket", &options.daemon_socket},
                                                              {"--runtime-dir", &options.runtime_dir},
                                                              {"--shim-dir", &options.shim_dir}};
  for (const auto& [flag, path] : paths) {
    if (!absolute(*path)) errors.push_back(std::string(flag) + ": " + *path + " is not an absolute path");
  }
  // The kubelet joins the endpoint to its directory: a path here would point elsewhere.
  if (options.endpoint.empty() || options.endpoint.find('/') != std::string::npos ||
      options.endpoint == "." || options.endpoint == ".." || options.endpoint == "kubelet.sock")
    errors.push_back("--endpoint: " + options.endpoint +
                     " must be a file name in the plugin directory, not kubelet.sock");
  checkSocketPath("--daemon-socket", options.daemon_socket, &errors);
  checkSocketPath("--plugin-dir/kubelet.sock", options.plugin_dir + "/kubelet.sock", &errors);
  checkSocketPath("--plugin-dir/--endpoint", options.plugin_dir + "/" + options.endpoint, &errors);
  if (options.slots < 1 || options.slots > 1024)
    errors.push_back("--slots: " + std::to_string(options.slots) + " is not in [1, 1024]");
  if (options.device < 0) errors.push_back("--device: " + std::to_string(options.device) + " is negative");
  if (options.poll_interval_ms < 10 || options.poll_interval_ms > 60000)
    errors.push_back("--poll-interval-ms: " + std::to_string(options.poll_interval_ms) +
                     " is not in [10, 60000]");
  return errors;
}

bool parseOptions(int argc, char** argv, PluginOptions* options, int* exit_code) {
  CLI::App app{"agileos-device-plugin: advertises AgileOS GPU slots (agileos.io/gpu) to the kubelet"};
  app.add_option("--plugin-dir", options->plugin_dir, "the kubelet's device-plugin directory")
      ->capture_default_str();
  app.add_option("--endpoint", options->endpoint, "the plugin's socket, a file name in --plugin-dir")
      ->capture_default_str();
  app.add_option("--daemon-socket", options->daemon_socket, "agileosd's client socket (socket_path)")
      ->capture_default_str();
  app.add_option("--runtime-dir", options->runtime_dir, "agileosd's runtime_dir (the workers' sockets)")
      ->capture_default_str();
  app.add_option("--shim-dir", options->shim_dir, "the installed client shims (lib/agileos/shim)")
      ->capture_default_str();
  app.add_option("--device", options->device, "the GPU ordinal agileosd's workers open (worker.device)")
      ->capture_default_str();
  app.add_option("--slots", options->slots, "devices advertised (e.g. worker.max_workers)")
      ->capture_default_str();
  app.add_option("--poll-interval-ms", options->poll_interval_ms,
                 "how often the daemon's and the kubelet's sockets are checked")
      ->capture_default_str();
  const std::map<std::string, AllocateMode> modes = {
      {"both", AllocateMode::kBoth}, {"cdi", AllocateMode::kCdi}, {"direct", AllocateMode::kDirect}};
  std::string mode = "both";
  app.add_option("--allocate-mode", mode,
                 "Allocate answers: both (CDI name and edits), cdi, or direct (edits only)")
      ->check(CLI::IsMember({"both", "cdi", "direct"}))
      ->capture_default_str();
  app.add_option("--log-level", options->log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_flag(
      "--check-daemon", options->check_daemon,
      "exit 0 if --daemon-socket accepts a connection, 1 if not (a probe for the daemon's container)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help exits 0; a flag CLI11 cannot parse is a usage error, 2 as is customary, whatever
    // CLI11's own code for it.
    *exit_code = app.exit(error) == 0 ? 0 : 2;
    return false;
  }
  options->allocate_mode = modes.at(mode);
  const std::vector<std::string> errors = checkOptions(*options);
  for (const std::string& error : errors) std::fprintf(stderr, "agileos-device-plugin: %s\n", error.c_str());
  if (!errors.empty()) {
    *exit_code = 1;
    return false;
  }
  return true;
}

}  // namespace agileos::device_plugin
