// DaemonMetrics: the daemon's Prometheus metrics, read from the pool, the service supervisor and
// the session registry when scraped (nothing is counted twice: each number has one owner, and
// this file only names and exports it). Served over HTTP by MetricsEndpoint (config
// metrics.listen) and through the admin API (GetMetrics).
//
// Every counter is monotonic for the daemon's run: call counts include reaped workers' (the
// pool keeps them), and guard hits are counted as reports arrive.
//
// Thread-safety: Collect() and text() may run on any thread (the HTTP server's, the admin API's).
#pragma once

#include <prometheus/collectable.h>

#include <memory>
#include <string>
#include <vector>

namespace prometheus {
class Exposer;
}

namespace agileos::scheduler {

class WorkerPool;
class ServiceSupervisor;
class SessionRegistry;

class DaemonMetrics final : public prometheus::Collectable {
 public:
  // Each must outlive this object's last Collect().
  DaemonMetrics(const WorkerPool& pool, const ServiceSupervisor& services, const SessionRegistry& sessions);

  std::vector<prometheus::MetricFamily> Collect() const override;
  // The Prometheus text exposition format of Collect().
  std::string text() const;

 private:
  const WorkerPool& pool_;
  const ServiceSupervisor& services_;
  const SessionRegistry& sessions_;
};

// An HTTP server answering GET /metrics with `metrics` (prometheus-cpp's Exposer).
class MetricsEndpoint {
 public:
  // nullptr with *error when `listen` ("host:port") cannot be bound.
  static std::unique_ptr<MetricsEndpoint> start(const std::string& listen,
                                                std::shared_ptr<DaemonMetrics> metrics, std::string* error);
  ~MetricsEndpoint();

 private:
  MetricsEndpoint() = default;
  std::shared_ptr<DaemonMetrics> metrics_;  // the Exposer holds it weakly
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace agileos::scheduler
