#include "tests/cpu/scheduler/test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace agileos::scheduler::testing {

bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> readLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> MockEvents::matching(const std::vector<std::string>& parts) const {
  std::vector<std::string> out;
  for (const std::string& line : lines()) {
    bool all = true;
    for (const std::string& part : parts) all = all && line.find(part) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

bool MockEvents::waitFor(const std::vector<std::string>& parts, std::size_t times) const {
  return waitUntil([&] { return count(parts) >= times; });
}

pid_t MockEvents::pidOf(std::uint64_t worker_id) const {
  const std::vector<std::string> starts = matching({"worker=" + std::to_string(worker_id) + " ", " start "});
  if (starts.empty()) return 0;
  const std::size_t at = starts[0].find("pid=");
  return at == std::string::npos ? 0 : static_cast<pid_t>(std::stol(starts[0].substr(at + 4)));
}

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t paren = content.rfind(')');
  return paren != std::string::npos && paren + 2 < content.size() && content[paren + 2] == 'Z';
}

PoolOptions mockPoolOptions(const TempDir& dir, std::vector<std::string> mock_args) {
  PoolOptions options;
  options.worker_executable = kMockWorker;
  options.worker_args = {"--event-log=" + dir.file("events.log")};
  options.worker_args.insert(options.worker_args.end(), mock_args.begin(), mock_args.end());
  options.runtime_dir = dir.path();
  options.worker_log_level = "debug";
  options.prestart = 1;
  options.max_workers = 2;
  options.start_timeout = std::chrono::milliseconds(20000);
  options.reply_timeout = std::chrono::milliseconds(10000);
  options.shutdown_grace = std::chrono::milliseconds(10000);
  options.terminate_grace = std::chrono::milliseconds(10000);
  options.initial_backoff = std::chrono::milliseconds(20);
  options.max_backoff = std::chrono::milliseconds(80);
  return options;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : bytes) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

namespace {

std::vector<char*> argvOf(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& args) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::vector<char*> argv = argvOf(args);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ProcessResult result;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

pid_t startProcess(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<char*> argv = argvOf(args);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int log = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int waitForExit(pid_t pid) {
  int status = 0;
  const bool exited = waitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace agileos::scheduler::testing
