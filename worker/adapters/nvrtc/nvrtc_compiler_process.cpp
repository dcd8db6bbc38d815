#include "worker/adapters/nvrtc/nvrtc_compiler_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace agileos::adapters::nvrtc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxResultBytes = 256u << 20;  // PTX, CUBIN and substitute PTX together
constexpr std::size_t kMaxStderrBytes = 16u << 10;
constexpr int kExitBadInput = 2;  // compiler_main.cpp
constexpr int kExitNoJail = 3;

// The variables the helper inherits: how to find its libraries, and the sanitizers' settings of
// a test build. Nothing else of the worker's environment reaches it.
constexpr std::string_view kPassedVariables[] = {
    "LD_LIBRARY_PATH=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=", "TSAN_OPTIONS="};

struct Descriptor {
  int fd = -1;
  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool makePipe(Descriptor& read, Descriptor& write) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read.fd = fds[0];
  write.fd = fds[1];
  return true;
}

std::string directoryOfExecutable() {
  std::string path(4096, '\0');
  const ssize_t size = ::readlink("/proc/self/exe", path.data(), path.size());
  if (size <= 0 || static_cast<std::size_t>(size) >= path.size()) return ".";
  path.resize(static_cast<std::size_t>(size));
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}

void readNumber(const char* variable, unsigned minimum, unsigned maximum, unsigned* value,
                std::string* warnings) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return;
  unsigned parsed = 0;
  const std::string_view view(text);
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), parsed);
  if (error != std::errc() || end != view.data() + view.size() || parsed < minimum || parsed > maximum) {
    if (warnings != nullptr) {
      *warnings += std::string(variable) + "=" + std::string(view.substr(0, 32)) + " is not a number in [" +
                   std::to_string(minimum) + ", " + std::to_string(maximum) + "]; using " +
                   std::to_string(*value) + "\n";
    }
    return;
  }
  *value = parsed;
}

std::string describeSignal(int signal) {
  const char* name = sigabbrev_np(signal);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

// Reads what `fd` has now into `out`, up to `cap` bytes in all; false at end of file or error.
// Sets *overflow when more than `cap` arrived.
bool drain(int fd, std::string& out, std::size_t cap, bool* overflow) {
  char buffer[1 << 16];
  const ssize_t got = ::read(fd, buffer, sizeof buffer);
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got == 0) return false;
  const std::size_t room = cap - std::min(cap, out.size());
  out.append(buffer, std::min(room, static_cast<std::size_t>(got)));
  if (static_cast<std::size_t>(got) > room) *overflow = true;
  return true;
}

}  // namespace

CompilerSettings compilerSettingsFromEnvironment(std::string* warnings) {
  CompilerSettings settings;
  const char* path = std::getenv("AGILEOS_NVRTC_COMPILER");
  settings.executable = path != nullptr && *path != '\0'
                            ? std::string(path)
                            : directoryOfExecutable() + "/agileos-nvrtc-compiler";
  readNumber("AGILEOS_NVRTC_CPU_SECONDS", 1, 86400, &settings.cpuSeconds, warnings);
  readNumber("AGILEOS_NVRTC_MEMORY_MB", 256, 1u << 24, &settings.memoryMb, warnings);
  readNumber("AGILEOS_NVRTC_TIMEOUT_S", 1, 86400, &settings.timeoutSeconds, warnings);
  readNumber("AGILEOS_NVRTC_UID", 1, 0xfffffffe, &settings.uid, warnings);
  readNumber("AGILEOS_NVRTC_GID", 1, 0xfffffffe, &settings.gid, warnings);
  return settings;
}

CompilerOutcome runCompiler(const CompilerSettings& settings, const CompileRequest& request) {
  CompilerOutcome outcome;
  auto failWith = [&](nvrtcResult status, std::string failure) {
    outcome.result.reset();
    outcome.failureStatus = status;
    outcome.failure = std::move(failure);
    return std::move(outcome);
  };

  Descriptor stdinRead, stdinWrite, stdoutRead, stdoutWrite, stderrRead, stderrWrite;
  if (!makePipe(stdinRead, stdinWrite) || !makePipe(stdoutRead, stdoutWrite) ||
      !makePipe(stderrRead, stderrWrite)) {
    outcome.diagnostics = std::string("pipe2: ") + std::strerror(errno);
    return failWith(NVRTC_ERROR_INTERNAL_ERROR, "the compiler process could not be started");
  }

  std::vector<std::string> arguments = {
      settings.executable, "--cpu-seconds=" + std::to_string(settings.cpuSeconds),
      "--memory-mb=" + std::to_string(settings.memoryMb), "--uid=" + std::to_string(settings.uid),
      "--gid=" + std::to_string(settings.gid)};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** variable = environ; variable != nullptr && *variable != nullptr; ++variable) {
    for (std::string_view passed : kPassedVariables) {
      if (std::string_view(*variable).starts_with(passed)) envp.push_back(*variable);
    }
  }
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_adddup2(&actions, stdinRead.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, stdoutWrite.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, stderrWrite.fd, STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int spawned =
      posix_spawn(&pid, settings.executable.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    outcome.diagnostics = "posix_spawn " + settings.executable + ": " + std::strerror(spawned);
    return failWith(NVRTC_ERROR_INTERNAL_ERROR, "the compiler process could not be started");
  }
  stdinRead.reset();
  stdoutWrite.reset();
  stderrWrite.reset();

  const unsigned timeout =
      settings.timeoutSeconds != 0 ? settings.timeoutSeconds : 2 * settings.cpuSeconds + 10;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout);
  const std::string input = encodeRequest(request);
  std::size_t sent = 0;
  std::string output, errors;
  bool outputOpen = true, errorsOpen = true, overflow = false, errorsOverflow = false, timedOut = false;
  ::fcntl(stdinWrite.fd, F_SETFL, O_NONBLOCK);
  if (input.empty()) stdinWrite.reset();
  while (outputOpen || errorsOpen) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timedOut = true;
      break;
    }
    pollfd fds[3] = {{stdoutRead.fd, POLLIN, 0}, {stderrRead.fd, POLLIN, 0}, {stdinWrite.fd, POLLOUT, 0}};
    if (!outputOpen) fds[0].fd = -1;
    if (!errorsOpen) fds[1].fd = -1;
    const int ready = ::poll(fds, 3, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (fds[0].revents != 0) outputOpen = drain(stdoutRead.fd, output, kMaxResultBytes, &overflow);
    if (fds[1].revents != 0) errorsOpen = drain(stderrRead.fd, errors, kMaxStderrBytes, &errorsOverflow);
    if (overflow) break;
    if (stdinWrite.fd >= 0 && fds[2].revents != 0) {
      // The worker ignores SIGPIPE (worker_process.cpp): a helper that is gone gives EPIPE.
      const ssize_t written = ::write(stdinWrite.fd, input.data() + sent, input.size() - sent);
      if (written > 0) sent += static_cast<std::size_t>(written);
      if ((written < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) stdinWrite.reset();
    }
  }
  stdinWrite.reset();

  // Reap: wait (without reaping) for the exit until the deadline, kill what is left of the
  // process group while the zombie still holds its id, then reap.
  bool killed = timedOut || overflow;
  if (!killed) {
    for (;;) {
      siginfo_t info{};
      const int waited = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if ((waited == 0 && info.si_pid == pid) || (waited != 0 && errno != EINTR)) break;
      if (Clock::now() >= deadline) {
        killed = timedOut = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  pid_t reaped = -1;
  do {
    reaped = ::waitpid(pid, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  if (reaped != pid) {
    // Someone else reaped it (SIGCHLD ignored?): its ending is unknown, so there is no result.
    outcome.diagnostics = std::string("waitpid: ") + std::strerror(errno);
    return failWith(NVRTC_ERROR_INTERNAL_ERROR, "the compiler process's exit status is unknown");
  }

  outcome.diagnostics = "agileos-nvrtc-compiler (pid " + std::to_string(pid) + ") ";
  if (WIFEXITED(status)) {
    outcome.diagnostics += "exited with status " + std::to_string(WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    outcome.diagnostics += "ended by " + describeSignal(WTERMSIG(status));
  }
  if (timedOut) outcome.diagnostics += " (killed at the " + std::to_string(timeout) + " s deadline)";
  if (overflow) outcome.diagnostics += " (killed: result over the cap)";
  if (!errors.empty()) {
    while (!errors.empty() && errors.back() == '\n') errors.pop_back();
    outcome.diagnostics += "; stderr: " + errors + (errorsOverflow ? " [truncated]" : "");
  }

  if (overflow) {
    return failWith(NVRTC_ERROR_COMPILATION,
                    "the compilation's output exceeds " + std::to_string(kMaxResultBytes >> 20) + " MiB");
  }
  if (timedOut) {
    return failWith(NVRTC_ERROR_COMPILATION, "the compilation exceeded its time limit (" +
                                                 std::to_string(timeout) + " s) and was stopped");
  }
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    if (signal == SIGXCPU || signal == SIGKILL) {
      return failWith(NVRTC_ERROR_COMPILATION, "the compilation exceeded its CPU time limit (" +
                                                   std::to_string(settings.cpuSeconds) +
                                                   " s) and was stopped");
    }
    if (signal == SIGSYS) {
      return failWith(NVRTC_ERROR_COMPILATION,
                      "the compiler process made a system call its sandbox forbids and was stopped");
    }
    return failWith(NVRTC_ERROR_COMPILATION, "the compiler process crashed (" + describeSignal(signal) +
                                                 "), possibly at its memory limit of " +
                                                 std::to_string(settings.memoryMb) + " MiB");
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kExitNoJail) {
    return failWith(NVRTC_ERROR_INTERNAL_ERROR,
                    "the NVRTC sandbox could not be set up on this worker; nothing was compiled");
  }
  if (code == kExitBadInput)
    return failWith(NVRTC_ERROR_INTERNAL_ERROR, "the compiler process refused the request");
  if (code != 0) {
    return failWith(NVRTC_ERROR_COMPILATION,
                    "the compiler process failed (exit status " + std::to_string(code) + ")");
  }
  outcome.result = decodeResult(output);
  if (!outcome.result)
    return failWith(NVRTC_ERROR_INTERNAL_ERROR, "the compiler process returned a malformed result");
  return outcome;
}

}  // namespace agileos::adapters::nvrtc
