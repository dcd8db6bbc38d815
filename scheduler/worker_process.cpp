#include "scheduler/worker_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::scheduler {
namespace {

// Descriptors are moved above this before fork so that dup2(…, kWorkerControlFd) in the child
// can never clobber one the child still needs.
constexpr int kFirstHighFd = 10;
constexpr int kControlTimeoutSeconds = 1;

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Moves `fd` to a close-on-exec descriptor >= kFirstHighFd and closes the original.
int moveHigh(int fd) {
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, kFirstHighFd);
  ::close(fd);
  return high;
}

void setControlTimeouts(int fd) {
  const timeval timeout{kControlTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

// Runs in the child between fork and exec: async-signal-safe calls only. Never returns.
[[noreturn]] void execWorker(char* const* argv, int child_end, int error_pipe, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);  // the daemon died before the death signal was armed

  // Handlers are reset by exec, but ignored dispositions and the signal mask are inherited.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  const int dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (dev_null >= 0) ::dup2(dev_null, STDIN_FILENO);  // dup2 clears close-on-exec on fd 0
  if (::dup2(child_end, kWorkerControlFd) < 0) {
    const int err = errno;
    (void)!::write(error_pipe, &err, sizeof err);
    ::_exit(127);
  }
  // Everything above the control fd closes at exec, whatever the daemon had open.
  if (::syscall(SYS_close_range, kWorkerControlFd + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = kWorkerControlFd + 1; fd < 65536; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::execv(argv[0], argv);
  const int err = errno;
  (void)!::write(error_pipe, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

std::vector<std::string> workerCommandLine(const WorkerLaunchSpec& spec) {
  std::vector<std::string> argv = {
      spec.executable,
      "--control-fd=" + std::to_string(kWorkerControlFd),
      "--endpoint=" + spec.endpoint,
      "--device=" + std::to_string(spec.device),
      "--worker-id=" + std::to_string(spec.worker_id),
      "--log-level=" + spec.log_level,
  };
  argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  return argv;
}

std::string describeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = ::sigdescr_np(sig);
    return "killed by signal " + std::to_string(sig) + " (" + (name ? name : "unknown") + ")";
  }
  return "ended with wait status " + std::to_string(wait_status);
}

std::unique_ptr<WorkerProcess> WorkerProcess::spawn(const WorkerLaunchSpec& spec, std::string* error) {
  // Everything the child needs is prepared before fork: it may not allocate.
  std::vector<std::string> args = workerCommandLine(spec);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    *error = errnoText("socketpair");
    return nullptr;
  }
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    *error = errnoText("pipe2");
    ::close(pair[0]);
    ::close(pair[1]);
    return nullptr;
  }
  const int daemon_end = pair[0];
  const int child_end = moveHigh(pair[1]);
  const int exec_read = exec_pipe[0];
  const int exec_write = moveHigh(exec_pipe[1]);
  if (child_end < 0 || exec_write < 0) {
    *error = errnoText("fcntl(F_DUPFD_CLOEXEC)");
    for (int fd : {daemon_end, child_end, exec_read, exec_write}) {
      if (fd >= 0) ::close(fd);
    }
    return nullptr;
  }

  // Block every signal across fork so the child cannot run a daemon handler before it resets them.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) execWorker(argv.data(), child_end, exec_write, parent);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(child_end);
  ::close(exec_write);
  if (pid < 0) {
    errno = fork_errno;
    *error = errnoText("fork");
    ::close(daemon_end);
    ::close(exec_read);
    return nullptr;
  }
  // Also set the group from this side, so signalGroup() works even before the child runs.
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
    *error = "cannot execute " + spec.executable + ": " + std::strerror(exec_errno);
    ::close(daemon_end);
    return nullptr;
  }

  setControlTimeouts(daemon_end);
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, daemon_end));
}

WorkerProcess::~WorkerProcess() {
  closeControl();
  if (!reaped_) {
    signalGroup(SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

wire::FrameStatus WorkerProcess::send(const agileos::v1::internal::DaemonToWorker& message) {
  if (control_fd_ < 0) return wire::FrameStatus::kClosed;
  return wire::writeFrame(control_fd_, message);
}

wire::FrameStatus WorkerProcess::receive(agileos::v1::internal::WorkerToDaemon* message) {
  if (control_fd_ < 0) return wire::FrameStatus::kClosed;
  return wire::readFrame(control_fd_, message);
}

void WorkerProcess::closeControl() {
  if (control_fd_ >= 0) ::close(control_fd_);
  control_fd_ = -1;
}

void WorkerProcess::signalGroup(int signal) {
  // Until reaped, the worker's pid (= its group id) cannot be reused, so this never hits a
  // stranger.
  if (!reaped_) ::kill(-pid_, signal);
}

std::optional<int> WorkerProcess::tryReap() {
  if (reaped_) return std::nullopt;
  siginfo_t info{};
  // Peek first (WNOWAIT): while the exited worker is an unreaped zombie its group id stays
  // reserved, so leftovers of the group can be killed safely before the reap.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
    return std::nullopt;
  }
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
