// WorkerProcess: one agileos-worker child and the daemon's end of its control channel.
//
// Launch contract (the worker side implements the other half):
//   <executable> --control-fd=3 --endpoint=unix:<runtime_dir>/worker-<id>.sock --device=<d>
//                --worker-id=<id> --log-level=<l> <extra args...>
// fd 3 is the worker's end of a socketpair(AF_UNIX, SOCK_STREAM) carrying length-prefixed
// WorkerToDaemon / DaemonToWorker messages (proto/framing.h), passed by spawnChild
// (scheduler/child_spawn.h), whose contract covers the rest: other descriptors closed, stdin
// /dev/null, own process group, PR_SET_PDEATHSIG=SIGKILL. Spawn from a long-lived thread: the
// death signal fires when the *thread* that forked exits.
//
// Ownership: the object owns the child until it is reaped; destroying an unreaped worker
// SIGKILLs its process group and reaps it (blocking briefly).
// Thread-safety: none; the owner (the pool's supervisor thread) serializes all calls.
// The daemon end has 1 s send/receive timeouts, so a stuck worker cannot block the caller for
// longer than that on one frame. Writing to a dead worker needs SIGPIPE ignored (the pool does).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agileos/v1/worker_control.pb.h"
#include "proto/framing.h"
#include "scheduler/child_spawn.h"
#include "scheduler/ids.h"
#include "scheduler/process_credentials.h"

namespace agileos::scheduler {

// The descriptor number the worker finds its control channel on.
inline constexpr int kWorkerControlFd = 3;

struct WorkerLaunchSpec {
  std::string executable;  // absolute (or cwd-relative) path; no PATH search
  WorkerId worker_id = 0;
  std::string endpoint;  // e.g. "unix:/run/agileos/worker-7.sock"
  int device = 0;
  std::string log_level = "info";
  std::vector<std::string> extra_args;
  std::optional<ProcessCredentials> credentials;  // none: runs as the daemon
};

// The full argv (argv[0] = executable) a worker is started with.
std::vector<std::string> workerCommandLine(const WorkerLaunchSpec& spec);

// "exited with status 3", "killed by signal 9 (Killed)".
std::string describeWaitStatus(int wait_status);

class WorkerProcess {
 public:
  // Forks and execs the worker. Returns nullptr and sets *error if the socketpair, fork or exec
  // fails (an exec failure such as a missing binary is detected synchronously).
  static std::unique_ptr<WorkerProcess> spawn(const WorkerLaunchSpec& spec, std::string* error);

  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return child_.pid(); }
  // The daemon's end of the control channel, or -1 once closed.
  int controlFd() const { return control_fd_; }

  wire::FrameStatus send(const agileos::v1::internal::DaemonToWorker& message);
  // Blocks (up to the receive timeout) for one frame; call when controlFd() is readable.
  wire::FrameStatus receive(agileos::v1::internal::WorkerToDaemon* message);
  void closeControl();

  // Sends `signal` to the worker's process group. No-op once reaped.
  void signalGroup(int signal) { child_.signalGroup(signal); }

  // If the worker has exited: kills whatever is left in its process group, reaps it and returns
  // its wait status. Returns nullopt while it runs, and after it has been reaped once.
  std::optional<int> tryReap() { return child_.tryReap(); }
  bool reaped() const { return child_.reaped(); }

 private:
  WorkerProcess(pid_t pid, int control_fd) : child_(pid), control_fd_(control_fd) {}

  ChildProcess child_;  // killed and reaped, if it was not, after the control fd is closed
  int control_fd_;
};

}  // namespace agileos::scheduler
