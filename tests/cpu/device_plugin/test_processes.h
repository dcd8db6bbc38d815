// Helpers of the device plugin tests: the plugin as a child process, and a stand-in for
// agileosd's client socket (a unix socket that listens and never reads: the plugin only connects).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace agileos::device_plugin::testing {

// agileos-device-plugin with `args`, its stdout and stderr to `log_path`.
class PluginProcess {
 public:
  PluginProcess(const std::vector<std::string>& args, std::string log_path);
  // Stops it with SIGTERM if it still runs.
  ~PluginProcess();
  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;

  bool started() const { return pid_ > 0; }
  // SIGTERM, then waits; the exit status as waitpid gives it, -1 when it could not be waited for.
  int stop();
  std::string log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// Runs agileos-device-plugin with `args` to its end; its exit code (-1 if it did not exit).
int runPluginToExit(const std::vector<std::string>& args, const std::string& log_path);

// A listening unix socket at a path, as the daemon's would be.
class ListeningSocket {
 public:
  explicit ListeningSocket(std::string path);
  ~ListeningSocket();
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  bool listening() const { return fd_ >= 0; }
  // Closes the socket but leaves its file: what a daemon that died leaves behind.
  void closeKeepingFile();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace agileos::device_plugin::testing
