// DaemonAdminBackend: the admin API's view of a running daemon (AdminBackend over its pool,
// services, session registry, session runner and metrics).
//
// Thread-safety: every method may run on any thread; each reads through the thread-safe
// snapshot methods of what it holds.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "scheduler/admin_service.h"

namespace agileos::scheduler {

class WorkerPool;
class ServiceSupervisor;
class SessionRegistry;
class SessionRunner;
class DaemonMetrics;

struct DaemonAdminParts {
  WorkerPool& pool;
  const ServiceSupervisor& services;
  SessionRegistry& sessions;
  SessionRunner& runner;
  const DaemonMetrics& metrics;
  std::string config_path;  // re-read by reloadModules; "" when the daemon has no file
  std::uint32_t max_workers = 0;
  std::chrono::system_clock::time_point started;
};

class DaemonAdminBackend final : public AdminBackend {
 public:
  explicit DaemonAdminBackend(DaemonAdminParts parts) : parts_(std::move(parts)) {}

  agileos::v1::admin::Status status() const override;
  bool drainWorker(std::uint64_t worker, const std::string& reason, std::string* message) override;
  bool endSession(std::uint64_t client, const std::string& reason, std::string* message) override;
  // Re-reads config_path; the new `modules` section replaces the old one only if the whole file
  // is valid and every module's service is one the daemon runs (services are not reloaded).
  bool reloadModules(std::string* message) override;
  std::string metricsText() const override;

 private:
  DaemonAdminParts parts_;
};

}  // namespace agileos::scheduler
