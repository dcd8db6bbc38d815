// DaemonServer: agileosd's gRPC front end. Serves agileos.v1.Daemon/Session on
// unix:<socket_path> with a synchronous gRPC server; the session logic lives in SessionRunner,
// the workers in WorkerPool and the services in ServiceSupervisor, none of which sees a gRPC type.
//
// Order: services start before the pool and the listener (a client's worker may need one at
// once) and stop after them (a worker may use one until it is gone). The admin API and the
// metrics endpoint start after the pool and stop before it. Both gRPC servers answer the
// standard grpc.health.v1 Health service (SERVING while the daemon serves).
//
// Socket permissions: the socket file is mode 0666 so that clients in sandboxes running as any
// user can connect. Access control is by mount namespace: only containers into which the
// socket (or its directory) is bind-mounted can reach it. See docs/operations.md.
//
// Thread-safety: start() and stop() from one controlling thread; stop() is idempotent and
// also runs from the destructor.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "scheduler/client_session.h"
#include "scheduler/daemon_config.h"
#include "scheduler/peer_listener.h"
#include "scheduler/service_supervisor.h"
#include "scheduler/worker_pool.h"

namespace grpc {
class Server;
}

namespace agileos::scheduler {

class AdminServer;
class DaemonAdminBackend;
class DaemonMetrics;
class MetricsEndpoint;
class SessionRegistry;

struct DaemonServerOptions {
  std::string socket_path;
  std::string runtime_dir;
  std::string placement = "dedicated";
  std::string audit_log;  // opened at start() (scheduler/audit_log.h); empty: no audit trail
  // The admin API (scheduler/admin_service.h); empty socket path: none.
  std::string admin_socket_path;
  gid_t admin_gid = 0;
  std::string metrics_listen;  // "host:port" of the Prometheus endpoint; empty: none
  std::string config_path;     // the file the admin API's ReloadModules re-reads; may be empty
  // Upper bound on gRPC server threads. Each live session holds one; sessions beyond the
  // worker slots are refused quickly, so max_workers * 2 + 8 leaves ample room.
  int max_threads = 16;
  PoolOptions pool;  // start() adds the sockets of `services` to pool.service_sockets
  // The workers get --module-cache-dir: start() makes a fresh random key for the cache's
  // entries (pool.module_cache_key), which lives only in this daemon and its workers.
  bool module_cache = false;
  std::string module_cache_dir;  // guard.cache_dir, made (and, with shared_gid, given to it) at start
  // Set when workers and services run as ids of their own (PrivilegesSection, a root daemon):
  // the group of all of them, which owns the module cache and the service socket directory.
  std::optional<gid_t> shared_gid;
  SessionOptions session;
  SupervisorOptions services;  // start() sets services.runtime_dir to runtime_dir
  // After sessions have been told to end, how long stop() waits for their streams to close
  // before gRPC cancels them.
  std::chrono::milliseconds rpc_drain_timeout{5000};
  // Once every handler has returned, how long gRPC may still take to deliver their final
  // statuses before it cancels what is left. A handler's status is written after it returns,
  // so cancelling at once can turn a clean close into CANCELLED; the bound also caps how long
  // an idle client that ignores GOAWAY can hold the shutdown.
  std::chrono::milliseconds rpc_status_flush{500};
};

// Options for a config. Relative worker and service executables are resolved against
// `daemon_dir`, the directory of the agileosd binary (resolveExecutable).
DaemonServerOptions serverOptionsFromConfig(const DaemonConfig& config, const std::string& daemon_dir);

// Fills the identities of workers and services (pool.identities, services' credentials, the
// shared group) from `privileges` when it is enabled and the daemon is root; else leaves them
// unset (children run as the daemon).
void applyPrivileges(const PrivilegesSection& privileges, bool daemon_is_root, DaemonServerOptions* options);

class DaemonServer {
 public:
  explicit DaemonServer(DaemonServerOptions options);
  ~DaemonServer();
  DaemonServer(const DaemonServer&) = delete;
  DaemonServer& operator=(const DaemonServer&) = delete;

  // Creates the runtime directory, replaces a stale socket, starts the services (failing if one
  // cannot be started), starts the pool and listens. False with *error on failure (nothing is
  // left running then).
  bool start(std::string* error);

  // Stops accepting clients, ends every session (SessionEnded "daemon shutting down"), shuts
  // all workers down, stops the services, and removes the socket file. Blocks until done.
  void stop();

  WorkerPool& pool() { return *pool_; }
  ServiceSupervisor& services() { return *services_; }
  SessionRegistry& sessions() { return *sessions_; }
  const DaemonMetrics& metrics() const { return *metrics_; }

 private:
  class GrpcService;
  // The metrics endpoint and the admin API, once the pool runs. False with *error.
  bool startOperatorInterfaces(const std::shared_ptr<class AuditLog>& audit, std::string* error);

  const DaemonServerOptions options_;
  std::unique_ptr<ServiceSupervisor> services_;
  std::unique_ptr<WorkerPool> pool_;
  std::shared_ptr<SessionRegistry> sessions_;
  std::unique_ptr<SessionRunner> runner_;
  std::shared_ptr<DaemonMetrics> metrics_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  std::unique_ptr<DaemonAdminBackend> admin_backend_;
  std::unique_ptr<AdminServer> admin_;
  std::unique_ptr<PeerListener> listener_;
  std::unique_ptr<GrpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  bool running_ = false;
};

}  // namespace agileos::scheduler
