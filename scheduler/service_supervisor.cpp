#include "scheduler/service_supervisor.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "scheduler/daemon_config.h"
#include "scheduler/runtime_files.h"
#include "scheduler/worker_process.h"

namespace agileos::scheduler {
namespace {

// How often stop() checks whether the services it sent SIGTERM have exited.
constexpr auto kStopPollInterval = std::chrono::milliseconds(10);

std::string msText(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// Removes the socket file at `path`; anything else there (which prepareSocketPath refused to
// delete) is left alone.
void removeSocketFile(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode)) ::unlink(path.c_str());
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) out += (out.empty() ? "" : " ") + arg;
  return out;
}

}  // namespace

const char* toString(ServiceState state) {
  switch (state) {
    case ServiceState::kStarting:
      return "starting";
    case ServiceState::kRunning:
      return "running";
    case ServiceState::kRestarting:
      return "restarting";
    case ServiceState::kFailed:
      return "failed";
    case ServiceState::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::vector<std::string> serviceCommandLine(const ServiceSpec& spec, const std::string& socket_path) {
  std::vector<std::string> argv = {spec.executable};
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  argv.push_back("--socket");
  argv.push_back(socket_path);
  return argv;
}

ServiceSupervisor::ServiceSupervisor(SupervisorOptions options) : options_(std::move(options)) {
  for (const ServiceSpec& spec : options_.services) {
    Service& service = services_.emplace_back();
    service.spec = spec;
    service.socket_path = serviceSocketPath(options_.runtime_dir, spec.name);
  }
}

ServiceSupervisor::~ServiceSupervisor() { stop(); }

bool ServiceSupervisor::start(std::string* error) {
  if (!services_.empty()) {
    const std::string dir = serviceSocketDir(options_.runtime_dir);
    if (!ensureDirectory(dir, error)) return false;
    // Trusted workers only (serviceSocketPath).
    if (options_.socket_group ? !restrictDirectory(dir, ::geteuid(), *options_.socket_group, 02770, error)
                              : !restrictDirectory(dir, ::geteuid(), ::getegid(), 0700, error)) {
      return false;
    }
  }
  {
    std::unique_lock lock(mu_);
    if (stopping_) {
      *error = "services: already stopped";
      return false;
    }
    if (monitor_.joinable()) {
      *error = startup_error_;
      return startup_error_.empty();
    }
    for (const Service& service : services_) {
      if (service.socket_path.size() > kMaxUnixSocketPathBytes) {
        *error = "service '" + service.spec.name + "': socket path " + service.socket_path +
                 " is longer than " + std::to_string(kMaxUnixSocketPathBytes) + " bytes";
        return false;
      }
    }
    if (services_.empty()) return true;
    spdlog::info("services: starting {}", services_.size());
    monitor_ = std::thread(&ServiceSupervisor::monitorLoop, this);
    cv_.wait(lock, [&] { return startup_done_; });
    if (startup_error_.empty()) {
      spdlog::info("services: all {} running", services_.size());
      return true;
    }
    *error = startup_error_;
  }
  stop();  // the others, which may have started
  return false;
}

void ServiceSupervisor::stop() {
  std::lock_guard stop_lock(stop_mu_);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (!monitor_.joinable()) return;
  }
  cv_.notify_all();
  monitor_.join();
  // The monitor removed the sockets; the directory goes too if nothing else is in it.
  if (!services_.empty()) ::rmdir(serviceSocketDir(options_.runtime_dir).c_str());
  spdlog::info("services stopped");
}

std::string ServiceSupervisor::socketPath(const std::string& name) const {
  // services_' names and socket paths never change after construction: no lock needed.
  for (const Service& service : services_) {
    if (service.spec.name == name) return service.socket_path;
  }
  return "";
}

std::optional<ServiceStatus> ServiceSupervisor::status(const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const Service& service : services_) {
    if (service.spec.name == name) return statusOf(service);
  }
  return std::nullopt;
}

std::vector<ServiceStatus> ServiceSupervisor::statuses() const {
  std::lock_guard lock(mu_);
  std::vector<ServiceStatus> out;
  for (const Service& service : services_) out.push_back(statusOf(service));
  return out;
}

std::string ServiceSupervisor::unavailableReason(const std::string& name) const {
  const std::optional<ServiceStatus> current = status(name);
  if (!current) return "";
  if (current->state != ServiceState::kFailed && current->state != ServiceState::kStopped) return "";
  std::string reason = "service '" + name + "' is down (" + toString(current->state);
  if (!current->last_exit.empty()) reason += "; last: " + current->last_exit;
  return reason + ")";
}

void ServiceSupervisor::monitorLoop() {
  std::unique_lock lock(mu_);
  for (Service& service : services_) {
    launch(service);
    if (!startup_error_.empty()) break;  // the daemon will not start; spawn nothing more
  }
  while (!stopping_) {
    // After a start failure the daemon gives up: start() is about to stop everything.
    if (startup_error_.empty()) {
      const auto now = Clock::now();
      for (Service& service : services_) step(service, now);
    }
    if (!startup_done_ && startupSettled()) {
      startup_done_ = true;
      cv_.notify_all();
    }
    cv_.wait_until(lock, nextWakeup(Clock::now()), [&] { return stopping_; });
  }
  terminateAll(lock);
  if (!startup_done_) {  // stop() overtook start(): it must not wait forever
    startup_error_ = "services: stopped while starting";
    startup_done_ = true;
    cv_.notify_all();
  }
}

void ServiceSupervisor::launch(Service& service) {
  std::string error;
  if (!prepareSocketPath(service.socket_path, &error)) return wentDown(service, "cannot start: " + error);
  const std::vector<std::string> argv = serviceCommandLine(service.spec, service.socket_path);
  service.process = ChildProcess::spawn(argv, PassedDescriptor{}, &error,
                                        service.spec.credentials ? &*service.spec.credentials : nullptr);
  if (!service.process) return wentDown(service, "cannot start: " + error);
  service.deadline = Clock::now() + service.spec.start_timeout;
  setState(service, ServiceState::kStarting);
  spdlog::info("service {} (pid {}): starting: {}", service.spec.name, service.process->pid(), joined(argv));
}

void ServiceSupervisor::step(Service& service, Clock::time_point now) {
  switch (service.state) {
    case ServiceState::kStarting: {
      if (const std::optional<int> status = service.process->tryReap(); status) {
        return wentDown(service, "exited before it was ready: " + describeWaitStatus(*status));
      }
      if (unixSocketAccepts(service.socket_path)) {
        service.ever_ready = true;
        setState(service, ServiceState::kRunning);
        spdlog::info("service {} (pid {}): ready on {}", service.spec.name, service.process->pid(),
                     service.socket_path);
        return;
      }
      if (now >= service.deadline) {
        service.process->killAndReap();
        return wentDown(service, "did not accept connections on " + service.socket_path + " within " +
                                     msText(service.spec.start_timeout) + " (start_timeout_ms); killed");
      }
      return;
    }
    case ServiceState::kRunning:
      if (const std::optional<int> status = service.process->tryReap(); status) {
        wentDown(service, describeWaitStatus(*status));
      }
      return;
    case ServiceState::kRestarting:
      if (now >= service.deadline) launch(service);
      return;
    case ServiceState::kFailed:
    case ServiceState::kStopped:
      return;
  }
}

void ServiceSupervisor::wentDown(Service& service, const std::string& why) {
  const std::string who = service.process ? "service " + service.spec.name + " (pid " +
                                                std::to_string(service.process->pid()) + ")"
                                          : "service " + service.spec.name;
  service.process.reset();  // reaped already, or never spawned
  service.last_exit = why;
  removeSocketFile(service.socket_path);  // workers get ENOENT, not a dead listener's refusal

  if (!startup_done_ && !service.ever_ready) {
    // At daemon start there are no retries: the daemon refuses to run without the service.
    setState(service, ServiceState::kFailed);
    spdlog::error("{}: {}", who, why);
    if (startup_error_.empty()) startup_error_ = "service '" + service.spec.name + "': " + why;
    return;
  }

  const auto now = Clock::now();
  std::deque<Clock::time_point>& recent = service.recent_restarts;
  while (!recent.empty() && now - recent.front() >= service.spec.restart_window) recent.pop_front();
  if (recent.size() >= service.spec.max_restarts) {
    setState(service, ServiceState::kFailed);
    spdlog::error("{}: {}; failed: {} restart(s) within {} s already (max_restarts {}); it stays down", who,
                  why, recent.size(), service.spec.restart_window.count(), service.spec.max_restarts);
    return;
  }
  // Doubling per restart still inside the window, so a service that crashed long ago gets the
  // short delay again while a crash loop slows down.
  auto backoff = options_.initial_backoff;
  for (std::size_t i = 0; i < recent.size() && backoff < options_.max_backoff; ++i) backoff *= 2;
  backoff = std::min(backoff, options_.max_backoff);
  recent.push_back(now);
  ++service.restarts;
  service.deadline = now + backoff;
  setState(service, ServiceState::kRestarting);
  spdlog::warn("{}: {}; restarting in {} (restart {} of at most {} within {} s)", who, why, msText(backoff),
               recent.size(), service.spec.max_restarts, service.spec.restart_window.count());
}

void ServiceSupervisor::terminateAll(std::unique_lock<std::mutex>& lock) {
  for (Service& service : services_) {
    if (!service.process) continue;
    spdlog::info("service {} (pid {}): stopping (SIGTERM)", service.spec.name, service.process->pid());
    service.process->signalGroup(SIGTERM);
  }
  const auto deadline = Clock::now() + options_.terminate_grace;
  for (;;) {
    bool running = false;
    for (Service& service : services_) {
      if (!service.process) continue;
      if (const std::optional<int> status = service.process->tryReap(); status) {
        spdlog::info("service {} (pid {}): stopped, {}", service.spec.name, service.process->pid(),
                     describeWaitStatus(*status));
        service.process.reset();
      } else {
        running = true;
      }
    }
    if (!running || Clock::now() >= deadline) break;
    cv_.wait_for(lock, kStopPollInterval);  // releases mu_: status() readers are not held up
  }
  for (Service& service : services_) {
    if (service.process) {
      spdlog::warn("service {} (pid {}): did not exit within {} of SIGTERM; sending SIGKILL",
                   service.spec.name, service.process->pid(), msText(options_.terminate_grace));
      const std::optional<int> status = service.process->killAndReap();
      spdlog::info("service {} (pid {}): stopped, {}", service.spec.name, service.process->pid(),
                   status ? describeWaitStatus(*status) : "reaped");
      service.process.reset();
    }
    removeSocketFile(service.socket_path);
    if (service.state != ServiceState::kFailed) setState(service, ServiceState::kStopped);
  }
}

bool ServiceSupervisor::startupSettled() const {
  if (!startup_error_.empty()) return true;
  return std::all_of(services_.begin(), services_.end(),
                     [](const Service& service) { return service.state == ServiceState::kRunning; });
}

ServiceSupervisor::Clock::time_point ServiceSupervisor::nextWakeup(Clock::time_point now) const {
  auto next = now + options_.reap_poll_interval;
  for (const Service& service : services_) {
    if (service.state == ServiceState::kStarting) {
      next = std::min({next, now + options_.ready_poll_interval, service.deadline});
    } else if (service.state == ServiceState::kRestarting) {
      next = std::min(next, service.deadline);
    }
  }
  return next;
}

ServiceStatus ServiceSupervisor::statusOf(const Service& service) const {
  ServiceStatus out;
  out.name = service.spec.name;
  out.socket_path = service.socket_path;
  out.state = service.state;
  out.pid = service.process ? service.process->pid() : 0;
  out.restarts = service.restarts;
  out.last_exit = service.last_exit;
  return out;
}

void ServiceSupervisor::setState(Service& service, ServiceState state) {
  if (service.state == state) return;
  spdlog::debug("service {}: {} -> {}", service.spec.name, toString(service.state), toString(state));
  service.state = state;
}

}  // namespace agileos::scheduler
