#include "scheduler/daemon_admin_backend.h"

#include <algorithm>
#include <map>

#include "scheduler/client_session.h"
#include "scheduler/daemon_config.h"
#include "scheduler/daemon_metrics.h"
#include "scheduler/service_supervisor.h"
#include "scheduler/session_registry.h"
#include "scheduler/worker_pool.h"

namespace agileos::scheduler {
namespace {

namespace admin = agileos::v1::admin;

std::int64_t unixMillis(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

void fillClient(const ClientSnapshot& pooled, const SessionInfo* session, admin::Client* out) {
  out->set_id(pooled.id);
  out->set_state(pooled.state);
  out->set_worker(pooled.worker);
  if (pooled.device) out->set_device(*pooled.device);
  out->set_memory_quota_bytes(pooled.memory_quota_bytes);
  out->set_queued_ms(static_cast<std::uint64_t>(pooled.waited.count()));
  if (pooled.peer_uid) out->set_uid(*pooled.peer_uid);
  if (session != nullptr) {
    if (session->peer) {
      out->set_uid(session->peer->uid);
      out->set_gid(session->peer->gid);
      out->set_pid(session->peer->pid);
    }
    out->set_program(session->program);
    out->set_guard_policy(session->guard_policy);
    for (const std::string& module : session->modules) out->add_modules(module);
    out->set_started_unix_ms(unixMillis(session->started));
  }
  if (pooled.usage) {
    out->set_usage_reported(true);
    out->set_device_memory_bytes(pooled.usage->device_memory_bytes);
    out->set_pinned_host_bytes(pooled.usage->pinned_host_bytes);
    out->set_calls(pooled.usage->calls);
    out->set_guard_hits(pooled.usage->guard_hits);
    out->set_guard_poisoned(pooled.usage->guard_poisoned);
  }
}

std::uint64_t callsOf(const CallTotals& totals) {
  std::uint64_t calls = 0;
  for (const auto& [name, operation] : totals.operations) calls += operation.calls;
  return calls;
}

}  // namespace

admin::Status DaemonAdminBackend::status() const {
  const PoolSnapshot pool = parts_.pool.snapshot();
  std::map<ClientId, SessionInfo> sessions;
  for (SessionInfo& info : parts_.sessions.list()) sessions.emplace(info.client, std::move(info));
  admin::Status out;
  for (const ClientSnapshot& client : pool.client_list) {
    auto it = sessions.find(client.id);
    fillClient(client, it == sessions.end() ? nullptr : &it->second, out.add_clients());
  }
  for (const WorkerSnapshot& worker : pool.workers) {
    admin::Worker* w = out.add_workers();
    w->set_id(worker.id);
    w->set_pid(worker.pid);
    w->set_phase(toString(worker.phase));
    w->set_device(worker.device);
    if (worker.uid) w->set_uid(*worker.uid);
    for (ClientId id : worker.clients) w->add_clients(id);
    w->set_tainted(worker.tainted);
    w->set_taint_reason(worker.taint_reason);
    w->set_draining(worker.draining);
    w->set_drain_reason(worker.drain_reason);
    w->set_calls(callsOf(worker.calls));
  }
  for (const ServiceStatus& service : parts_.services.statuses()) {
    admin::Service* s = out.add_services();
    s->set_name(service.name);
    s->set_state(toString(service.state));
    s->set_pid(service.pid);
    s->set_restarts(service.restarts);
    s->set_last_exit(service.last_exit);
    s->set_socket_path(service.socket_path);
  }
  const std::shared_ptr<const ModulesSection> modules = parts_.runner.modules();
  const bool allowAll =
      std::find(modules->allowed.begin(), modules->allowed.end(), "*") != modules->allowed.end();
  for (const agileos::modules::ModuleEntry& entry : modules->pool.modules) {
    admin::Module* m = out.add_modules();
    m->set_name(entry.name);
    m->set_version(entry.version.toString());
    m->set_allowed(allowAll || std::find(modules->allowed.begin(), modules->allowed.end(), entry.name) !=
                                   modules->allowed.end());
    m->set_service(entry.service);
    for (const auto& dependency : entry.depends) m->add_depends(dependency.name);
  }
  out.set_queued(static_cast<std::uint32_t>(pool.queued));
  for (int device : pool.devices) out.add_devices(device);
  out.set_max_workers(parts_.max_workers);
  out.set_started_unix_ms(unixMillis(parts_.started));
  return out;
}

bool DaemonAdminBackend::drainWorker(std::uint64_t worker, const std::string& reason, std::string* message) {
  if (!parts_.pool.drain(worker, reason, message)) return false;
  *message = "worker " + std::to_string(worker) + " drained: it takes no new clients and retires once idle";
  return true;
}

bool DaemonAdminBackend::endSession(std::uint64_t client, const std::string& reason, std::string* message) {
  if (!parts_.sessions.end(client, reason)) {
    *message = "no live session of client " + std::to_string(client);
    return false;
  }
  *message = "client " + std::to_string(client) + " told its session ended (" + reason + ")";
  return true;
}

bool DaemonAdminBackend::reloadModules(std::string* message) {
  if (parts_.config_path.empty()) {
    *message = "the daemon was started without a configuration file; there is nothing to reload";
    return false;
  }
  ConfigResult loaded = loadDaemonConfig(parts_.config_path);
  if (!loaded.ok()) {
    *message = parts_.config_path + " is not valid, nothing changed: " + loaded.errors.front();
    return false;
  }
  const std::vector<ServiceStatus> running = parts_.services.statuses();
  for (const agileos::modules::ModuleEntry& entry : loaded.config->modules.pool.modules) {
    if (entry.service.empty()) continue;
    const bool runs = std::any_of(running.begin(), running.end(), [&](const ServiceStatus& service) {
      return service.name == entry.service;
    });
    if (!runs) {
      *message = "module '" + entry.name + "' needs service '" + entry.service +
                 "', which this daemon does not run (services change only at a restart); nothing changed";
      return false;
    }
  }
  const std::size_t count = loaded.config->modules.pool.modules.size();
  parts_.runner.setModules(std::move(loaded.config->modules));
  *message = "module pool reloaded from " + parts_.config_path + ": " + std::to_string(count) +
             " module(s); new sessions are admitted against it";
  return true;
}

std::string DaemonAdminBackend::metricsText() const { return parts_.metrics.text(); }

}  // namespace agileos::scheduler
