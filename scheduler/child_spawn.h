// spawnChild / ChildProcess: how the daemon starts and owns a child process (a worker or a service).
//
// Launch contract: argv as given (argv[0] is the executable; no PATH search), stdin on
// /dev/null, stdout/stderr shared with the daemon, optionally one descriptor of the daemon's
// placed at a fixed number in the child, every other descriptor closed at exec, every signal
// disposition and the signal mask reset, its own process group (so the daemon can signal the
// child and anything it started as one unit) and PR_SET_PDEATHSIG=SIGKILL (so it never outlives
// the daemon). Spawn from a long-lived thread: the death signal fires when the *thread* that
// forked exits. An exec failure (a missing binary, say) is detected before spawnChild returns.
// With credentials, the child takes them (groups, gid, uid: process_credentials.h) before the
// death signal is armed (a change of ids clears it) and before exec; a failure there is
// reported like an exec failure.
//
// Reaping: only waitid/waitpid on the child's own pid, never on "any child", so one owner's
// children (the worker pool's, the service supervisor's) are never taken from another.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/process_credentials.h"

namespace agileos::scheduler {

// A descriptor the child gets: `fd` of the daemon's, as descriptor `as` in the child (> 2).
struct PassedDescriptor {
  int fd = -1;  // -1: none
  int as = -1;
};

// Forks and execs `argv`. Returns the child's pid, or -1 with *error set (the child, if one was
// forked, is reaped then). The caller keeps ownership of `passed.fd`.
// `credentials`: null to run as the daemon.
pid_t spawnChild(const std::vector<std::string>& argv, PassedDescriptor passed, std::string* error,
                 const ProcessCredentials* credentials = nullptr);

// One spawned child and its process group, owned until reaped; destroying an unreaped one
// SIGKILLs its process group and reaps it (blocking briefly).
// Thread-safety: none; the owner serializes all calls.
class ChildProcess {
 public:
  // spawnChild, owned. Returns nullptr with *error set when it fails.
  static std::unique_ptr<ChildProcess> spawn(const std::vector<std::string>& argv, PassedDescriptor passed,
                                             std::string* error,
                                             const ProcessCredentials* credentials = nullptr);

  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ~ChildProcess() { killAndReap(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Sends `signal` to the child's process group. No-op once reaped.
  void signalGroup(int signal);

  // If the child has exited: kills whatever is left in its process group, reaps it and returns
  // its wait status. Returns nullopt while it runs, and after it has been reaped once.
  std::optional<int> tryReap();

  // SIGKILLs the process group and reaps the child (blocks until it is gone); its wait status, or
  // nullopt if it had been reaped already.
  std::optional<int> killAndReap();

  bool reaped() const { return reaped_; }

 private:
  pid_t pid_;
  bool reaped_ = false;
};

}  // namespace agileos::scheduler
