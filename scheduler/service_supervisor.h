// ServiceSupervisor: starts the daemon's services (the `services` config section), keeps them
// running, and stops them.
//
// Each service listens on <runtime_dir>/service-<name>.sock, which it is told with
// "--socket <path>" after its configured args. It is ready once that socket accepts a
// connection (the supervisor connects every ready_poll_interval and closes at once, sending
// nothing); one that exits, or is not ready within its start_timeout, has failed to start.
//
// Lifecycle of a service: starting -> running -> (exits) restarting -> starting -> ...
//   - start() starts every service at once and waits until all are running. If one cannot be
//     started (spawn error, exit, start timeout) start() stops the others and fails naming it:
//     the daemon must not run with a service missing.
//   - Later, a service that exits (or fails to start again) is restarted after a backoff
//     (initial_backoff doubling per restart within the window, at most max_backoff), as long as
//     fewer than max_restarts restarts happened within the last restart_window. Beyond that it is
//     failed: logged as an error, its socket removed, never started again.
//   - stop() sends SIGTERM to every service's process group, waits up to terminate_grace, then
//     SIGKILLs what is left, reaps everything and removes the sockets.
//
// One monitor thread owns every process: it spawns them (so PR_SET_PDEATHSIG is tied to a thread
// that lives as long as the supervisor), probes the sockets, reaps exits (waitid on its own
// pids only; the worker pool reaps its workers the same way) and restarts. The other methods only
// read the status table or wake the thread.
//
// Thread-safety: all public methods are safe to call from any thread; start() and stop() from
// one controlling thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/child_spawn.h"
#include "scheduler/process_credentials.h"

namespace agileos::scheduler {

struct ServiceSpec {
  std::string name;        // a valid module/service name, unique among the specs
  std::string executable;  // resolved (resolveExecutable); no PATH search
  std::vector<std::string> args;
  std::chrono::milliseconds start_timeout{10000};
  std::uint32_t max_restarts = 5;
  std::chrono::seconds restart_window{60};
  // What the service runs as (PrivilegesSection); none: the daemon's ids.
  std::optional<ProcessCredentials> credentials;
};

struct SupervisorOptions {
  std::string runtime_dir;  // service sockets: <runtime_dir>/service-<name>.sock; created if missing
  std::vector<ServiceSpec> services;
  // The socket directory's group when services and workers run as their own ids: the directory
  // is root's, mode 2770, so members (the workers and services) reach the sockets and no one
  // else does. None: the daemon's, mode 0700.
  std::optional<gid_t> socket_group;
  std::chrono::milliseconds initial_backoff{100};  // before the first restart within the window
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds terminate_grace{2000};    // SIGTERM -> SIGKILL at stop()
  std::chrono::milliseconds ready_poll_interval{20};  // socket probes while starting
  std::chrono::milliseconds reap_poll_interval{100};  // waitid polls while running
};

enum class ServiceState {
  kStarting,    // spawned; its socket does not accept yet
  kRunning,     // its socket accepted a connection; not seen exiting since
  kRestarting,  // exited or failed to start; waiting out the backoff
  kFailed,      // too many restarts (or failed at daemon start); stays down
  kStopped,     // not started yet, or stopped by stop()
};
const char* toString(ServiceState state);

struct ServiceStatus {
  std::string name;
  std::string socket_path;
  ServiceState state = ServiceState::kStopped;
  pid_t pid = 0;               // the running (or starting) process; 0 when there is none
  std::uint32_t restarts = 0;  // restarts since start()
  std::string last_exit;       // why it last went down ("exited with status 3", ...); "" if never
};

// The full argv (argv[0] = executable) service `spec` is started with.
std::vector<std::string> serviceCommandLine(const ServiceSpec& spec, const std::string& socket_path);

class ServiceSupervisor {
 public:
  explicit ServiceSupervisor(SupervisorOptions options);
  ~ServiceSupervisor();  // stop()
  ServiceSupervisor(const ServiceSupervisor&) = delete;
  ServiceSupervisor& operator=(const ServiceSupervisor&) = delete;

  // Starts every service and waits until each one's socket accepts (or one fails). False with
  // *error ("service 'storage': ...") if any cannot be started; nothing is left running then.
  // Call once.
  bool start(std::string* error);

  // Terminates every service (SIGTERM, SIGKILL after terminate_grace), reaps them and removes
  // their sockets. Idempotent.
  void stop();

  // Where service `name` listens, or "" if there is no such service. Fixed at construction.
  std::string socketPath(const std::string& name) const;

  std::optional<ServiceStatus> status(const std::string& name) const;
  std::vector<ServiceStatus> statuses() const;  // config order

  // Why service `name` cannot serve a new client: "" while it runs, starts or waits out a restart
  // backoff (a worker's connect rides that out), and for a name that is not a service here; for
  // a failed or stopped service, a sentence for the client's refusal that names the service, its
  // state and how it last went down.
  std::string unavailableReason(const std::string& name) const;

 private:
  using Clock = std::chrono::steady_clock;

  struct Service {
    ServiceSpec spec;
    std::string socket_path;
    ServiceState state = ServiceState::kStopped;
    std::unique_ptr<ChildProcess> process;  // while starting or running
    Clock::time_point deadline;             // starting: ready by; restarting: start again at
    bool ever_ready = false;
    std::uint32_t restarts = 0;
    std::deque<Clock::time_point> recent_restarts;  // within restart_window, oldest first
    std::string last_exit;
  };

  // Monitor thread; each helper below runs on it with mu_ held.
  void monitorLoop();
  void launch(Service& service);
  void step(Service& service, Clock::time_point now);
  void wentDown(Service& service, const std::string& why);
  void terminateAll(std::unique_lock<std::mutex>& lock);
  bool startupSettled() const;
  Clock::time_point nextWakeup(Clock::time_point now) const;
  ServiceStatus statusOf(const Service& service) const;
  void setState(Service& service, ServiceState state);

  const SupervisorOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // wakes the monitor (stop) and start() (startup settled)
  std::vector<Service> services_;
  bool startup_done_ = false;  // start() has its answer: all running, or startup_error_
  std::string startup_error_;
  bool stopping_ = false;
  std::thread monitor_;
  std::mutex stop_mu_;  // serializes stop() callers
};

}  // namespace agileos::scheduler
