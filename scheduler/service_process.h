// ServiceProcess: one service child of the daemon (scheduler/service_supervisor.h).
//
// Launch contract: spawnChild's (scheduler/child_spawn.h), with no descriptor passed. Spawn from a
// long-lived thread: the death signal fires when the *thread* that forked exits.
//
// Reaping: only waitid/waitpid on this child's own pid, never on "any child", so the worker
// pool's children (reaped by the pool's supervisor the same way) are never taken from it.
//
// Ownership: the object owns the child until it is reaped; destroying an unreaped one SIGKILLs
// its process group and reaps it (blocking briefly).
// Thread-safety: none; the owner (the supervisor's monitor thread) serializes all calls.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agileos::scheduler {

class ServiceProcess {
 public:
  // Forks and execs argv. Returns nullptr and sets *error if the fork or the exec fails (an
  // exec failure such as a missing binary is detected synchronously).
  static std::unique_ptr<ServiceProcess> spawn(const std::vector<std::string>& argv, std::string* error);

  ~ServiceProcess();
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Sends `signal` to the service's process group. No-op once reaped.
  void signalGroup(int signal);

  // If the service has exited: kills whatever is left in its process group, reaps it and
  // returns its wait status. Returns nullopt while it runs, and after it has been reaped once.
  std::optional<int> tryReap();

  // SIGKILLs the process group and reaps the service (blocks until it is gone); its wait
  // status, or nullopt if it had been reaped already.
  std::optional<int> killAndReap();

  bool reaped() const { return reaped_; }

 private:
  explicit ServiceProcess(pid_t pid) : pid_(pid) {}

  pid_t pid_;
  bool reaped_ = false;
};

}  // namespace agileos::scheduler
