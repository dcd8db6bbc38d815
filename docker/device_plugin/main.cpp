// agileos-device-plugin: the kubelet device plugin for AgileOS (docs/kubernetes.md). Runs beside
// agileosd on a GPU node; advertises agileos.io/gpu and answers Allocate with the CDI device
// agileos.io/gpu=<device> and the same edits spelled out: the shims and the daemon's socket, never
// a device node. Stops on SIGTERM or SIGINT.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <thread>

#include "docker/device_plugin/daemon_probe.h"
#include "docker/device_plugin/plugin_options.h"
#include "docker/device_plugin/plugin_runner.h"

int main(int argc, char** argv) {
  using namespace agileos::device_plugin;
  PluginOptions options;
  int exit_code = 0;
  if (!parseOptions(argc, argv, &options, &exit_code)) return exit_code;
  if (options.check_daemon) {
    const bool accepts = daemonAcceptsConnections(options.daemon_socket);
    std::printf("agileosd at %s: %s\n", options.daemon_socket.c_str(),
                accepts ? "accepts connections" : "does not accept connections");
    return accepts ? 0 : 1;
  }
  // Logs go to stderr, stdout stays for --check-daemon's answer.
  spdlog::set_default_logger(spdlog::stderr_color_mt("agileos-device-plugin"));
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [%l] %n: %v");

  // Blocked before any thread starts (gRPC's included), so only the waiting thread takes them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  PluginRunner runner(options);
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    spdlog::info("signal {}: stopping", signal);
    runner.requestStop();
  });
  const int code = runner.run();
  // run() returns only after a stop request, which only the waiter makes: it has returned.
  waiter.join();
  return code;
}
