// agileosd: the AgileOS daemon. Parses the command line and config, starts DaemonServer, and
// waits for SIGTERM/SIGINT to stop it. Exit status: 0 after a clean stop (and for a valid
// --check-config or --cdi-spec), 1 for an invalid config or a failed start, 2 for a bad command
// line.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "scheduler/cdi_spec.h"
#include "scheduler/command_line.h"
#include "scheduler/daemon_config.h"
#include "scheduler/daemon_service.h"
#include "scheduler/runtime_files.h"

namespace {

using namespace agileos::scheduler;

void printErrors(const std::vector<std::string>& errors) {
  for (const std::string& error : errors) std::fprintf(stderr, "agileosd: %s\n", error.c_str());
}

// Descriptors 0-2 must be open, or a socket created later could land on one of them and be
// handed to workers as their stdin/stdout/stderr.
void ensureStandardDescriptorsOpen() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
}

// "" if `path` (the resolved value of config key `key`) can be executed, else the problem.
std::string executableProblem(const std::string& key, const std::string& path) {
  if (::access(path.c_str(), X_OK) == 0) return "";
  return key + ": " + path + " is not an executable file (" + std::strerror(errno) + ")";
}

std::vector<std::string> serviceExecutableProblems(const SupervisorOptions& services) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < services.services.size(); ++i) {
    const std::string key = "services[" + std::to_string(i) + "].executable";
    if (std::string problem = executableProblem(key, services.services[i].executable); !problem.empty()) {
      problems.push_back(std::move(problem));
    }
  }
  return problems;
}

// --cdi-spec: the spec for this configuration and the shim directory (the installation's unless
// --cdi-shim-dir names one), on stdout. The directory is resolved (realpath): the spec binds it
// into containers, and a container engine binds what a link points at.
int printCdiSpec(const CommandLine& command_line, const DaemonConfig& config) {
  const std::string named = command_line.cdi_shim_dir.value_or(installedShimDir(currentExecutableDir()));
  char* resolved = ::realpath(named.c_str(), nullptr);
  if (resolved == nullptr) {
    std::fprintf(stderr, "agileosd: --cdi-spec: shim directory %s: %s\n", named.c_str(),
                 std::strerror(errno));
    return 1;
  }
  CdiSpecInputs inputs{resolved, {}, config.socket_path, config.runtime_dir};
  std::free(resolved);
  std::string error;
  if (!findPreloadedShims(inputs.shim_dir, &inputs.preloaded_shims, &error)) {
    std::fprintf(stderr, "agileosd: --cdi-spec: %s\n", error.c_str());
    return 1;
  }
  std::fputs(cdiSpecText(inputs).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine command_line;
  std::string error;
  if (!parseCommandLine(std::vector<std::string>(argv + 1, argv + argc), &command_line, &error)) {
    std::fprintf(stderr, "agileosd: %s\n%s", error.c_str(), usageText());
    return 2;
  }
  if (command_line.help) {
    std::fputs(usageText(), stdout);
    return 0;
  }

  // Every log line goes to stderr, from the first one on: stdout carries only what
  // --check-config prints (the effective configuration, which the install ships as the example)
  // and --cdi-spec (the CDI spec, installed as etc/cdi/agileos.json).
  ensureStandardDescriptorsOpen();
  spdlog::set_default_logger(spdlog::stderr_color_mt("agileosd"));
  DaemonConfig config;
  if (command_line.config_path) {
    ConfigResult loaded = loadDaemonConfig(*command_line.config_path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "agileosd: invalid config %s:\n", command_line.config_path->c_str());
      printErrors(loaded.errors);
      return 1;
    }
    config = *loaded.config;
  }
  if (std::vector<std::string> errors = applyOverrides(command_line, &config); !errors.empty()) {
    printErrors(errors);
    return 1;
  }
  if (command_line.cdi_spec) return printCdiSpec(command_line, config);
  DaemonServerOptions options = serverOptionsFromConfig(config, currentExecutableDir());
  // Absolute, so that a reload reads the same file whatever the working directory is by then.
  if (command_line.config_path)
    options.config_path = std::filesystem::absolute(*command_line.config_path).string();
  const std::string worker_problem = executableProblem("worker.executable", options.pool.worker_executable);

  if (command_line.check_config) {
    std::vector<std::string> problems = serviceExecutableProblems(options.services);
    if (!worker_problem.empty()) problems.insert(problems.begin(), worker_problem);
    if (!problems.empty()) {
      printErrors(problems);
      return 1;
    }
    std::printf("%s\n", toJsonText(config).c_str());
    std::fprintf(stderr, "agileosd: config OK\n");
    return 0;
  }

  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e [%l] %v");
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  if (!worker_problem.empty()) spdlog::warn("{}; clients will be refused until it exists", worker_problem);
  // A service executable that is missing fails the start below, naming the service.

  // SIGTERM/SIGINT are taken synchronously by sigwait() below. Blocked before any thread exists,
  // so every thread inherits the mask and none of them is interrupted by these signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  DaemonServer server(options);
  if (!server.start(&error)) {
    spdlog::critical("cannot start: {}", error);
    sd_notifyf(0, "STATUS=cannot start: %s", error.c_str());
    return 1;
  }
  // Under systemd (Type=notify), ready once the client socket listens and the prestarted workers
  // were launched; without NOTIFY_SOCKET this does nothing.
  sd_notifyf(0, "READY=1\nSTATUS=listening on %s\nMAINPID=%d", config.socket_path.c_str(),
             static_cast<int>(::getpid()));
  int received = 0;
  while (::sigwait(&stop_signals, &received) != 0) {
  }
  spdlog::info("received SIG{}; shutting down", ::sigabbrev_np(received));
  sd_notify(0, "STOPPING=1");
  server.stop();
  return 0;
}
