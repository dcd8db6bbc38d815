#include "tests/cpu/device_plugin/test_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace agileos::device_plugin::testing {
namespace {

pid_t spawnPlugin(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> words = {AGILEOS_DEVICE_PLUGIN};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

int waitExit(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

PluginProcess::PluginProcess(const std::vector<std::string>& args, std::string log_path)
    : log_path_(std::move(log_path)) {
  pid_ = spawnPlugin(args, log_path_);
}

PluginProcess::~PluginProcess() { stop(); }

int PluginProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  const int code = waitExit(pid_);
  pid_ = -1;
  return code;
}

std::string PluginProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int runPluginToExit(const std::vector<std::string>& args, const std::string& log_path) {
  const pid_t pid = spawnPlugin(args, log_path);
  return pid > 0 ? waitExit(pid) : -1;
}

ListeningSocket::ListeningSocket(std::string path) : path_(std::move(path)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(address.sun_path)) return;
  std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
  ::unlink(path_.c_str());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd_, 4096) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

void ListeningSocket::closeKeepingFile() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace agileos::device_plugin::testing
