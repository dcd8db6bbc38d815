#include "scheduler/child_spawn.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::scheduler {
namespace {

// Descriptors the child still needs are moved above this before fork, so that placing the passed
// descriptor (dup2 to a small number) can never clobber one of them.
constexpr int kFirstHighFd = 10;

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A close-on-exec copy of `fd` at kFirstHighFd or above (the original stays open), or -1.
int copyHigh(int fd) { return ::fcntl(fd, F_DUPFD_CLOEXEC, kFirstHighFd); }

[[noreturn]] void reportAndExit(int error_pipe) {
  const int err = errno;
  (void)!::write(error_pipe, &err, sizeof err);
  ::_exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only. Never returns.
// `credentials`: null to keep the daemon's ids; its vector was filled before fork and is only read.
[[noreturn]] void execChild(char* const* argv, int passed_fd, int passed_as, int error_pipe, pid_t parent,
                            const ProcessCredentials* credentials) {
  ::setpgid(0, 0);
  if (credentials != nullptr && !takeIdsAfterFork(credentials->uid, credentials->gid,
                                                  credentials->groups.data(), credentials->groups.size())) {
    reportAndExit(error_pipe);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);       // after the ids: changing them clears the death signal
  if (::getppid() != parent) ::_exit(126);  // the daemon died before the death signal was armed

  // Handlers are reset by exec, but ignored dispositions and the signal mask are inherited (the
  // daemon ignores SIGPIPE and blocks SIGTERM/SIGINT, which the child must not inherit).
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  const int dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (dev_null >= 0) ::dup2(dev_null, STDIN_FILENO);  // dup2 clears close-on-exec on fd 0
  int keep_below = STDERR_FILENO + 1;
  if (passed_fd >= 0) {
    if (::dup2(passed_fd, passed_as) < 0) reportAndExit(error_pipe);
    keep_below = passed_as + 1;
  }
  // Everything above the kept descriptors closes at exec, whatever the daemon had open (the
  // error pipe too).
  if (::syscall(SYS_close_range, keep_below, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = keep_below; fd < 65536; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::execv(argv[0], argv);
  reportAndExit(error_pipe);
}

}  // namespace

pid_t spawnChild(const std::vector<std::string>& args, PassedDescriptor passed, std::string* error,
                 const ProcessCredentials* credentials) {
  if (args.empty()) {
    *error = "empty command line";
    return -1;
  }
  if (passed.fd >= 0 && (passed.as <= STDERR_FILENO || passed.as >= kFirstHighFd)) {
    *error = "a passed descriptor must go to 3.." + std::to_string(kFirstHighFd - 1);
    return -1;
  }
  // Everything the child needs is prepared before fork: it may not allocate.
  std::vector<std::string> copies = args;
  std::vector<char*> argv;
  for (std::string& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    *error = errnoText("pipe2");
    return -1;
  }
  const int exec_read = exec_pipe[0];
  const int exec_write = copyHigh(exec_pipe[1]);
  ::close(exec_pipe[1]);
  const int passed_high = passed.fd >= 0 ? copyHigh(passed.fd) : -1;
  if (exec_write < 0 || (passed.fd >= 0 && passed_high < 0)) {
    *error = errnoText("fcntl(F_DUPFD_CLOEXEC)");
    for (int fd : {exec_read, exec_write, passed_high}) {
      if (fd >= 0) ::close(fd);
    }
    return -1;
  }

  // Block every signal across fork so the child cannot run a daemon handler before it resets them.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) execChild(argv.data(), passed_high, passed.as, exec_write, parent, credentials);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(exec_write);
  if (passed_high >= 0) ::close(passed_high);
  if (pid < 0) {
    errno = fork_errno;
    *error = errnoText("fork");
    ::close(exec_read);
    return -1;
  }
  // Also set the group from this side, so signalling the group works even before the child runs.
  ::setpgid(pid, pid);

  // The pipe closes at a successful exec; otherwise the child reports errno through it.
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(exec_read, &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(exec_read);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string as = credentials != nullptr ? " as uid " + std::to_string(credentials->uid) : "";
    *error = "cannot execute " + args[0] + as + ": " + std::strerror(exec_errno);
    return -1;
  }
  return pid;
}

std::unique_ptr<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                                  PassedDescriptor passed, std::string* error,
                                                  const ProcessCredentials* credentials) {
  const pid_t pid = spawnChild(argv, passed, error, credentials);
  if (pid < 0) return nullptr;
  return std::make_unique<ChildProcess>(pid);
}

void ChildProcess::signalGroup(int signal) {
  // Until reaped, the child's pid (= its group id) cannot be reused, so this never hits a stranger.
  if (!reaped_) ::kill(-pid_, signal);
}

std::optional<int> ChildProcess::tryReap() {
  if (reaped_) return std::nullopt;
  siginfo_t info{};
  // Peek first (WNOWAIT): while the exited child is an unreaped zombie its group id stays
  // reserved, so leftovers of the group can be killed safely before the reap.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
    return std::nullopt;
  }
  return killAndReap();
}

std::optional<int> ChildProcess::killAndReap() {
  if (reaped_) return std::nullopt;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  reaped_ = true;
  return status;
}

}  // namespace agileos::scheduler
