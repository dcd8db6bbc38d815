#include "scheduler/worker_process.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "scheduler/child_spawn.h"

namespace agileos::scheduler {
namespace {

constexpr int kControlTimeoutSeconds = 1;

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void setControlTimeouts(int fd) {
  const timeval timeout{kControlTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
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
  const std::vector<std::string> args = workerCommandLine(spec);

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    *error = errnoText("socketpair");
    return nullptr;
  }
  const int daemon_end = pair[0];
  const pid_t pid = spawnChild(args, PassedDescriptor{pair[1], kWorkerControlFd}, error,
                               spec.credentials ? &*spec.credentials : nullptr);
  ::close(pair[1]);
  if (pid < 0) {
    ::close(daemon_end);
    return nullptr;
  }
  setControlTimeouts(daemon_end);
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, daemon_end));
}

WorkerProcess::~WorkerProcess() {
  closeControl();  // then child_ is killed and reaped, if it was not
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

}  // namespace agileos::scheduler
