#include "scheduler/service_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>

#include "scheduler/child_spawn.h"

namespace agileos::scheduler {

std::unique_ptr<ServiceProcess> ServiceProcess::spawn(const std::vector<std::string>& args,
                                                      std::string* error) {
  const pid_t pid = spawnChild(args, PassedDescriptor{}, error);
  if (pid < 0) return nullptr;
  return std::unique_ptr<ServiceProcess>(new ServiceProcess(pid));
}

ServiceProcess::~ServiceProcess() { killAndReap(); }

void ServiceProcess::signalGroup(int signal) {
  // Until reaped, the service's pid (= its group id) cannot be reused, so this never hits a
  // stranger.
  if (!reaped_) ::kill(-pid_, signal);
}

std::optional<int> ServiceProcess::tryReap() {
  if (reaped_) return std::nullopt;
  siginfo_t info{};
  // Peek first (WNOWAIT): while the exited service is an unreaped zombie its group id stays
  // reserved, so leftovers of the group can be killed safely before the reap.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
    return std::nullopt;
  }
  return killAndReap();
}

std::optional<int> ServiceProcess::killAndReap() {
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
