#include "scheduler/daemon_metrics.h"

#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <map>

#include "proto/wire/call_latency_buckets.h"
#include "scheduler/service_supervisor.h"
#include "scheduler/session_registry.h"
#include "scheduler/worker_pool.h"

namespace agileos::scheduler {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(const std::string& name, const std::string& help, MetricType type) {
  return MetricFamily{"agileos_" + name, help, type, {}};
}

void addCounter(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  family.metric.push_back(std::move(metric));
}

void addGauge(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

// `counts` per bucket (not cumulative; the last one unbounded) with upper `bounds`.
void addHistogram(MetricFamily& family, const std::vector<double>& bounds,
                  const std::vector<std::uint64_t>& counts, double sum,
                  std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    ClientMetric::Bucket bucket;
    bucket.cumulative_count = cumulative;
    bucket.upper_bound = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
    metric.histogram.bucket.push_back(bucket);
  }
  metric.histogram.sample_count = cumulative;
  metric.histogram.sample_sum = sum;
  family.metric.push_back(std::move(metric));
}

std::vector<double> callLatencyBoundsSeconds() {
  std::vector<double> bounds;
  for (std::uint64_t micros : wire::kCallLatencyBoundsMicros)
    bounds.push_back(static_cast<double>(micros) / 1e6);
  return bounds;
}

void collectSessions(const SessionCounters& counters, const PoolSnapshot& pool,
                     std::vector<MetricFamily>* out) {
  MetricFamily active = family("sessions", "Sessions assigned to a worker now", MetricType::Gauge);
  addGauge(active, static_cast<double>(pool.attached));
  out->push_back(std::move(active));

  MetricFamily started = family("sessions_started_total", "Sessions assigned a worker", MetricType::Counter);
  addCounter(started, static_cast<double>(counters.started));
  out->push_back(std::move(started));
  MetricFamily ended =
      family("sessions_ended_total", "Sessions that ended after their assignment", MetricType::Counter);
  addCounter(ended, static_cast<double>(counters.ended));
  out->push_back(std::move(ended));
  MetricFamily by_admin =
      family("sessions_ended_by_admin_total", "Sessions an administrator ended", MetricType::Counter);
  addCounter(by_admin, static_cast<double>(counters.ended_by_admin));
  out->push_back(std::move(by_admin));
  MetricFamily refused = family("sessions_refused_total", "Sessions refused, by reason", MetricType::Counter);
  for (const auto& [reason, count] : counters.refused)
    addCounter(refused, static_cast<double>(count), {{"reason", reason}});
  out->push_back(std::move(refused));

  MetricFamily queue =
      family("admission_queue_length", "Clients waiting for a worker slot", MetricType::Gauge);
  addGauge(queue, static_cast<double>(pool.queued));
  out->push_back(std::move(queue));
  MetricFamily wait =
      family("placement_wait_seconds",
             "From a session's admission to its assignment or refusal (queue and worker start)",
             MetricType::Histogram);
  addHistogram(wait, kPlacementWaitBoundsSeconds, counters.placement_wait_buckets,
               counters.placement_wait_seconds_sum);
  out->push_back(std::move(wait));

  MetricFamily hits = family("guard_hits_total", "Kernel memory guard hits reported, by the client's policy",
                             MetricType::Counter);
  for (const auto& [policy, count] : counters.guard_hits)
    addCounter(hits, static_cast<double>(count), {{"policy", policy}});
  out->push_back(std::move(hits));
}

void collectCalls(const CallTotals& calls, std::vector<MetricFamily>* out) {
  MetricFamily count = family("calls_total", "Calls workers dispatched, by operation", MetricType::Counter);
  MetricFamily errors =
      family("call_errors_total", "Calls answered with an error, by operation", MetricType::Counter);
  MetricFamily latency = family("call_duration_seconds",
                                "Time in the worker's dispatch of the calls clients waited for, by operation",
                                MetricType::Histogram);
  const std::vector<double> bounds = callLatencyBoundsSeconds();
  for (const auto& [operation, totals] : calls.operations) {
    addCounter(count, static_cast<double>(totals.calls), {{"operation", operation}});
    addCounter(errors, static_cast<double>(totals.errors), {{"operation", operation}});
    addHistogram(latency, bounds, totals.latency_buckets, static_cast<double>(totals.latency_ns_sum) / 1e9,
                 {{"operation", operation}});
  }
  out->push_back(std::move(count));
  out->push_back(std::move(errors));
  out->push_back(std::move(latency));
  MetricFamily bytes =
      family("bytes_copied_total", "Bytes copied by memcpy calls, by direction", MetricType::Counter);
  addCounter(bytes, static_cast<double>(calls.bytes_host_to_device), {{"direction", "host_to_device"}});
  addCounter(bytes, static_cast<double>(calls.bytes_device_to_host), {{"direction", "device_to_host"}});
  addCounter(bytes, static_cast<double>(calls.bytes_device_to_device), {{"direction", "device_to_device"}});
  out->push_back(std::move(bytes));
}

void collectMemory(const PoolSnapshot& pool, std::vector<MetricFamily>* out) {
  std::map<int, double> held_on, quota_on;
  for (int device : pool.devices) held_on[device] = quota_on[device] = 0;
  double pinned = 0;
  for (const ClientSnapshot& client : pool.client_list) {
    if (!client.device) continue;  // queued: nothing placed yet
    quota_on[*client.device] += static_cast<double>(client.memory_quota_bytes);
    if (!client.usage) continue;
    held_on[*client.device] += static_cast<double>(client.usage->device_memory_bytes);
    pinned += static_cast<double>(client.usage->pinned_host_bytes);
  }
  MetricFamily held =
      family("device_memory_held_bytes",
             "Device memory the clients hold (charged to their quotas), by device", MetricType::Gauge);
  for (const auto& [device, bytes] : held_on) addGauge(held, bytes, {{"device", std::to_string(device)}});
  out->push_back(std::move(held));
  MetricFamily promised = family("device_memory_quota_bytes",
                                 "The placed clients' device-memory quotas, by device", MetricType::Gauge);
  for (const auto& [device, bytes] : quota_on)
    addGauge(promised, bytes, {{"device", std::to_string(device)}});
  out->push_back(std::move(promised));
  MetricFamily host =
      family("pinned_host_memory_held_bytes", "Page-locked host memory the clients hold", MetricType::Gauge);
  addGauge(host, pinned);
  out->push_back(std::move(host));
}

void collectWorkers(const PoolSnapshot& pool, std::vector<MetricFamily>* out) {
  MetricFamily workers = family("workers", "Worker processes, by device and phase", MetricType::Gauge);
  for (int device : pool.devices) {
    for (WorkerPhase phase :
         {WorkerPhase::kStarting, WorkerPhase::kReady, WorkerPhase::kRetiring, WorkerPhase::kExiting}) {
      double n = 0;
      for (const WorkerSnapshot& worker : pool.workers)
        n += worker.phase == phase && worker.device == device ? 1 : 0;
      addGauge(workers, n, {{"device", std::to_string(device)}, {"phase", toString(phase)}});
    }
  }
  out->push_back(std::move(workers));
  const PoolCounters& c = pool.counters;
  const std::vector<std::tuple<const char*, const char*, std::uint64_t>> counters = {
      {"worker_starts_total", "Worker processes started", c.spawned},
      {"worker_start_failures_total", "Workers that failed to start or died before serving",
       c.start_failures},
      {"worker_retirements_total", "Workers asked to shut down", c.retired},
      {"worker_taints_total", "Workers whose context was found untrusted", c.tainted},
      {"worker_drains_total", "Workers an administrator drained", c.drained},
      {"worker_kills_total", "Workers killed with SIGKILL", c.sigkill_sent},
  };
  for (const auto& [name, help, value] : counters) {
    MetricFamily f = family(name, help, MetricType::Counter);
    addCounter(f, static_cast<double>(value));
    out->push_back(std::move(f));
  }
}

void collectServices(const std::vector<ServiceStatus>& services, std::vector<MetricFamily>* out) {
  MetricFamily up = family("service_up", "1 while the service runs and accepts", MetricType::Gauge);
  MetricFamily restarts = family("service_restarts_total", "Restarts of the service", MetricType::Counter);
  for (const ServiceStatus& service : services) {
    addGauge(up, service.state == ServiceState::kRunning ? 1 : 0, {{"service", service.name}});
    addCounter(restarts, static_cast<double>(service.restarts), {{"service", service.name}});
  }
  out->push_back(std::move(up));
  out->push_back(std::move(restarts));
}

}  // namespace

DaemonMetrics::DaemonMetrics(const WorkerPool& pool, const ServiceSupervisor& services,
                             const SessionRegistry& sessions)
    : pool_(pool), services_(services), sessions_(sessions) {}

std::vector<MetricFamily> DaemonMetrics::Collect() const {
  const PoolSnapshot pool = pool_.snapshot();
  std::vector<MetricFamily> out;
  collectSessions(sessions_.counters(), pool, &out);
  collectCalls(pool.calls, &out);
  collectMemory(pool, &out);
  collectWorkers(pool, &out);
  collectServices(services_.statuses(), &out);
  return out;
}

std::string DaemonMetrics::text() const { return prometheus::TextSerializer().Serialize(Collect()); }

std::unique_ptr<MetricsEndpoint> MetricsEndpoint::start(const std::string& listen,
                                                        std::shared_ptr<DaemonMetrics> metrics,
                                                        std::string* error) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    *error = "metrics.listen " + listen + ": cannot listen: " + e.what();
    return nullptr;
  }
  endpoint->metrics_ = std::move(metrics);
  endpoint->exposer_->RegisterCollectable(endpoint->metrics_);
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace agileos::scheduler
