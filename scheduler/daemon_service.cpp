#include "scheduler/daemon_service.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "agileos/v1/client_api.grpc.pb.h"
#include "scheduler/admin_service.h"
#include "scheduler/audit_log.h"
#include "scheduler/daemon_admin_backend.h"
#include "scheduler/daemon_metrics.h"
#include "scheduler/dedicated_placement.h"
#include "scheduler/runtime_files.h"
#include "scheduler/session_registry.h"
#include "scheduler/session_stream.h"

namespace agileos::scheduler {
namespace {

using agileos::v1::SessionDown;
using agileos::v1::SessionUp;

// Hello is tiny; anything bigger from an untrusted client is refused by gRPC before parsing.
constexpr int kMaxSessionMessageBytes = 64 * 1024;

// The only place a Session stream's gRPC types appear.
class GrpcSessionStream final : public SessionStream {
 public:
  GrpcSessionStream(grpc::ServerContext* context, grpc::ServerReaderWriter<SessionDown, SessionUp>* stream,
                    const PeerListener* listener)
      : context_(context), stream_(stream), listener_(listener) {}

  bool read(SessionUp* message) override { return stream_->Read(message); }
  bool write(const SessionDown& message) override { return stream_->Write(message); }
  void cancel() override { context_->TryCancel(); }
  std::string peer() const override { return context_->peer(); }
  bool gone() const override { return context_->IsCancelled(); }
  std::optional<PeerCredentials> credentials() const override {
    return listener_ != nullptr ? listener_->credentialsOf(context_->peer()) : std::nullopt;
  }

 private:
  grpc::ServerContext* context_;
  grpc::ServerReaderWriter<SessionDown, SessionUp>* stream_;
  const PeerListener* listener_;
};

constexpr std::size_t kModuleCacheKeyBytes = 32;

// kModuleCacheKeyBytes from the kernel's CSPRNG (getrandom, blocking until it is seeded).
bool randomModuleCacheKey(std::string* key, std::string* error) {
  key->assign(kModuleCacheKeyBytes, '\0');
  std::size_t filled = 0;
  while (filled < key->size()) {
    const ssize_t got = ::getrandom(key->data() + filled, key->size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      *error = std::string("getrandom for the module cache key: ") + std::strerror(errno);
      key->clear();
      return false;
    }
    filled += static_cast<std::size_t>(got);
  }
  return true;
}

std::unique_ptr<PlacementPolicy> makePlacementPolicy(const std::string& name) {
  if (name == "dedicated") return std::make_unique<DedicatedPlacement>();
  return nullptr;
}

}  // namespace

// The gRPC service; counts running Session handlers so that stop() can wait for them.
class DaemonServer::GrpcService final : public agileos::v1::Daemon::Service {
 public:
  GrpcService(SessionRunner& runner, const PeerListener& listener) : runner_(runner), listener_(listener) {}

  grpc::Status Session(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<SessionDown, SessionUp>* stream) override {
    {
      std::lock_guard lock(mu_);
      ++running_;
    }
    GrpcSessionStream session(context, stream, &listener_);
    runner_.run(session);
    std::lock_guard lock(mu_);
    --running_;
    idle_cv_.notify_all();
    return grpc::Status::OK;
  }

  // True once no Session handler runs; false if some still do after `timeout`.
  bool waitUntilIdle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return idle_cv_.wait_for(lock, timeout, [&] { return running_ == 0; });
  }

 private:
  SessionRunner& runner_;
  const PeerListener& listener_;
  std::mutex mu_;
  std::condition_variable idle_cv_;
  int running_ = 0;
};

// Host-wide leases of worker uids (UidRange): shared by every agileosd of the host.
constexpr const char* kWorkerUidLeaseDir = "/run/agileos-worker-uids";

void applyPrivileges(const PrivilegesSection& privileges, bool daemon_is_root, DaemonServerOptions* options) {
  if (!privileges.enabled || !daemon_is_root) return;
  const auto shared = static_cast<gid_t>(privileges.shared_gid);
  std::vector<gid_t> groups = deviceNodeGroups();
  groups.insert(groups.begin(), shared);
  options->shared_gid = shared;
  options->services.socket_group = shared;
  options->pool.identities = PoolOptions::Identities{static_cast<uid_t>(privileges.worker_uid_base),
                                                     privileges.worker_uid_count, groups, kWorkerUidLeaseDir};
  for (std::size_t i = 0; i < options->services.services.size(); ++i) {
    const auto id = static_cast<uid_t>(privileges.service_uid_base + i);
    options->services.services[i].credentials = ProcessCredentials{id, static_cast<gid_t>(id), groups};
  }
}

DaemonServerOptions serverOptionsFromConfig(const DaemonConfig& config, const std::string& daemon_dir) {
  DaemonServerOptions options;
  options.socket_path = config.socket_path;
  options.runtime_dir = config.runtime_dir;
  options.placement = config.placement;
  options.audit_log = config.audit_log;
  if (config.admin.enabled) {
    options.admin_socket_path = adminSocketPath(config);
    options.admin_gid = static_cast<gid_t>(config.admin.gid);
  }
  options.metrics_listen = config.metrics.listen;
  options.max_threads = static_cast<int>(config.worker.max_workers) * 2 + 8;
  options.pool.worker_executable = resolveExecutable(config.worker.executable, daemon_dir);
  options.pool.worker_args = config.worker.args;
  if (!config.guard.cache_dir.empty()) {
    options.pool.worker_args.push_back("--module-cache-dir=" + config.guard.cache_dir);
    options.pool.worker_args.push_back("--module-cache-bytes=" +
                                       std::to_string(config.guard.cache_max_bytes));
    options.module_cache = true;
    options.module_cache_dir = config.guard.cache_dir;
  }
  options.session.guard = config.guard;
  options.session.memory = config.memory;
  options.session.max_clients_per_uid = config.worker.max_clients_per_uid;
  options.pool.memory_reserve_bytes = config.memory.reserve_bytes;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  const PinnedHostBudget pinned = resolvePinnedHostBudget(
      config.memory, pages > 0 && page_size > 0 ? static_cast<std::uint64_t>(pages) * page_size : 0,
      config.worker.max_workers);
  options.pool.pinned_host_total_bytes = pinned.total_bytes;
  options.session.pinned_host_quota_bytes = pinned.per_client_bytes;
  spdlog::info("pinned host memory: {} bytes for all clients, {} per client", pinned.total_bytes,
               pinned.per_client_bytes);
  options.session.adapters = config.adapters;
  options.session.modules = config.modules;
  options.pool.runtime_dir = config.runtime_dir;
  options.pool.devices = servedDevices(config);
  options.session.devices = options.pool.devices;
  options.pool.worker_log_level = config.log_level;
  options.pool.prestart = config.worker.prestart;
  options.pool.max_workers = config.worker.max_workers;
  options.pool.start_timeout = std::chrono::milliseconds(config.worker.start_timeout_ms);
  options.pool.queue_wait = std::chrono::milliseconds(config.worker.queue_wait_ms);
  for (const ServiceConfig& service : config.services) {
    options.services.services.push_back({service.name, resolveExecutable(service.executable, daemon_dir),
                                         service.args, std::chrono::milliseconds(service.start_timeout_ms),
                                         service.max_restarts, std::chrono::seconds(service.restart_window_s),
                                         std::nullopt});
  }
  applyPrivileges(config.privileges, ::geteuid() == 0, &options);
  return options;
}

DaemonServer::DaemonServer(DaemonServerOptions options) : options_(std::move(options)) {}

DaemonServer::~DaemonServer() { stop(); }

bool DaemonServer::start(std::string* error) {
  if (running_) return true;
  std::unique_ptr<PlacementPolicy> policy = makePlacementPolicy(options_.placement);
  if (!policy) {
    *error = "unknown placement policy '" + options_.placement + "'";
    return false;
  }
  // The audit trail first: a daemon that cannot record who it serves does not serve.
  std::shared_ptr<AuditLog> audit;
  if (!options_.audit_log.empty()) {
    audit = AuditLog::open(options_.audit_log, error);
    if (!audit) return false;
  }
  if (!ensureDirectory(options_.runtime_dir, error)) return false;
  if (!prepareSocketPath(options_.socket_path, error)) return false;
  if (options_.module_cache && options_.shared_gid) {
    // Shared by the workers (each its own uid, all in the group), seen by no one else; the
    // entries are authenticated with this run's key besides.
    if (!ensureDirectory(options_.module_cache_dir, error) ||
        !restrictDirectory(options_.module_cache_dir, ::geteuid(), *options_.shared_gid, 02770, error)) {
      *error = "module cache: " + *error;
      return false;
    }
  }
  if (options_.pool.identities && !options_.pool.identities->lease_dir.empty()) {
    if (!ensureDirectory(options_.pool.identities->lease_dir, error) ||
        !restrictDirectory(options_.pool.identities->lease_dir, ::geteuid(), ::getegid(), 0700, error)) {
      *error = "worker uid leases: " + *error;
      return false;
    }
  }
  if (options_.pool.identities) {
    spdlog::info(
        "privileges: workers run as uids {}..{}, services as their own; shared group {}, {} more group(s) "
        "for the GPU device nodes",
        options_.pool.identities->uid_base,
        options_.pool.identities->uid_base + options_.pool.identities->uid_count - 1, *options_.shared_gid,
        options_.pool.identities->groups.size() - 1);
  } else if (::geteuid() != 0) {
    spdlog::warn(
        "privileges: the daemon is not root, so every worker and service runs as its uid {} "
        "(privileges.* cannot be applied)",
        ::geteuid());
  } else {
    spdlog::warn("privileges: disabled (privileges.enabled = false); workers and services run as root");
  }

  SupervisorOptions supervisor_options = options_.services;
  supervisor_options.runtime_dir = options_.runtime_dir;
  services_ = std::make_unique<ServiceSupervisor>(std::move(supervisor_options));
  if (!services_->start(error)) {
    services_.reset();
    return false;
  }
  // The workers learn each service's socket from the supervisor that runs it.
  PoolOptions pool_options = options_.pool;
  for (const ServiceSpec& spec : options_.services.services) {
    pool_options.service_sockets[spec.name] = services_->socketPath(spec.name);
  }
  if (options_.module_cache) {
    // A fresh key per daemon run: an entry is used only if this daemon's workers produced it.
    if (!randomModuleCacheKey(&pool_options.module_cache_key, error)) {
      services_->stop();
      services_.reset();
      return false;
    }
  }
  sessions_ = std::make_shared<SessionRegistry>();
  pool_options.on_event = [sessions = sessions_, audit](const PoolEvent& event) {
    nlohmann::json record = {{"worker", event.worker}};
    switch (event.kind) {
      case PoolEvent::Kind::kWorkerTainted:
        record.update({{"event", "worker_tainted"}, {"reason", event.reason}});
        break;
      case PoolEvent::Kind::kWorkerDrained:
        record.update({{"event", "worker_drained"}, {"reason", event.reason}});
        break;
      case PoolEvent::Kind::kGuardHits:
        sessions->countGuardHits(event.policy, event.new_hits);
        record.update({{"event", "guard_hits"},
                       {"client", event.client},
                       {"policy", event.policy},
                       {"new_hits", event.new_hits},
                       {"hits", event.guard_hits}});
        break;
    }
    if (audit) audit->record(std::move(record));
  };
  pool_ = std::make_unique<WorkerPool>(std::move(pool_options), std::move(policy));
  SessionOptions session = options_.session;
  session.registry = sessions_;
  session.audit = audit;
  session.service_unavailable = [services = services_.get()](const std::string& name) {
    return services->unavailableReason(name);
  };
  runner_ = std::make_unique<SessionRunner>(*pool_, std::move(session));
  listener_ = std::make_unique<PeerListener>();
  service_ = std::make_unique<GrpcService>(*runner_, *listener_);

  // No listening port: the daemon accepts itself (PeerListener) and hands each connection over.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  grpc::ResourceQuota quota("agileosd");
  quota.SetMaxThreads(options_.max_threads);
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(kMaxSessionMessageBytes);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || !listener_->start(options_.socket_path, server_.get(), error)) {
    if (server_) {
      server_->Shutdown();
      server_.reset();
    } else {
      *error = "cannot start the gRPC server";
    }
    service_.reset();
    runner_.reset();
    pool_.reset();
    services_.reset();
    return false;
  }
  pool_->start();
  metrics_ = std::make_shared<DaemonMetrics>(*pool_, *services_, *sessions_);
  if (!startOperatorInterfaces(audit, error)) {
    running_ = true;  // stop() undoes everything started so far
    stop();
    return false;
  }
  server_->GetHealthCheckService()->SetServingStatus(true);
  running_ = true;
  spdlog::info("agileosd: serving unix:{} (runtime dir {}, up to {} server threads)", options_.socket_path,
               options_.runtime_dir, options_.max_threads);
  return true;
}

bool DaemonServer::startOperatorInterfaces(const std::shared_ptr<AuditLog>& audit, std::string* error) {
  if (!options_.metrics_listen.empty()) {
    metrics_endpoint_ = MetricsEndpoint::start(options_.metrics_listen, metrics_, error);
    if (!metrics_endpoint_) return false;
    spdlog::info("metrics: http://{}/metrics", options_.metrics_listen);
  }
  if (options_.admin_socket_path.empty()) return true;
  admin_backend_ = std::make_unique<DaemonAdminBackend>(DaemonAdminParts{
      *pool_, *services_, *sessions_, *runner_, *metrics_, options_.config_path,
      static_cast<std::uint32_t>(options_.pool.max_workers), std::chrono::system_clock::now()});
  admin_ = std::make_unique<AdminServer>(
      AdminServerOptions{options_.admin_socket_path, options_.admin_gid, audit}, *admin_backend_);
  return admin_->start(error);
}

void DaemonServer::stop() {
  if (!running_) return;
  running_ = false;
  spdlog::info("agileosd: stopping");
  // Stopping the pool ends every session (SessionEnded) and refuses newcomers politely. Once
  // the handlers have returned (or the drain timeout passed), Shutdown with a short deadline
  // lets gRPC send the statuses of the finished handlers (it writes them after a handler
  // returns) and then cancels what is left and drops connections: an unbounded graceful
  // shutdown would also wait for idle clients to acknowledge GOAWAY, which a client need not do.
  if (server_->GetHealthCheckService() != nullptr) server_->GetHealthCheckService()->SetServingStatus(false);
  admin_.reset();  // the operator's view goes first: it reads the pool
  metrics_endpoint_.reset();
  listener_->stop();  // no new connections
  pool_->stop();
  if (!service_->waitUntilIdle(options_.rpc_drain_timeout)) {
    spdlog::warn("agileosd: sessions still open after {} ms; cancelling them",
                 options_.rpc_drain_timeout.count());
  }
  server_->Shutdown(std::chrono::system_clock::now() + options_.rpc_status_flush);
  server_.reset();
  services_->stop();
  ::unlink(options_.socket_path.c_str());
  spdlog::info("agileosd: stopped; removed {}", options_.socket_path);
}

}  // namespace agileos::scheduler
