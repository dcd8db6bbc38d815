// DaemonConfig: the agileosd configuration file (JSON), parsed and validated.
//
// Every field is optional; the defaults below are the documented defaults
// (docs/operations.md repeats them). Parsing is strict: an unknown key, a value of
// the wrong type or a value out of range is an error naming the key path
// ("worker.max_workers") and what was expected, so a typo never passes silently.
// `//` and `/* */` comments are accepted in the file.
//
// Thread-safety: plain functions and values; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "modules/catalog/module_manifest.h"

namespace agileos::scheduler {

// Longest path bind() accepts for a unix socket (sizeof(sockaddr_un::sun_path) - 1).
inline constexpr std::size_t kMaxUnixSocketPathBytes = 107;
// Longest runtime_dir that leaves room for "/worker-<20 digits>/call.shm.sock" in
// kMaxUnixSocketPathBytes.
inline constexpr std::size_t kMaxRuntimeDirBytes = kMaxUnixSocketPathBytes - 42;

struct WorkerConfig {
  // Worker binary. A relative path is resolved against the directory of the agileosd binary
  // (see resolveExecutable in runtime_files.h).
  std::string executable = "agileos-worker";
  int device = 0;  // CUDA device ordinal the workers open, when `devices` is empty
  // Every CUDA device ordinal this daemon serves (unique); each gets workers of its own and a
  // client goes to one of them (scheduler/device_choice.h). Empty: [device].
  std::vector<int> devices;
  std::uint32_t prestart = 1;     // ready workers kept waiting for clients (<= max_workers)
  std::uint32_t max_workers = 4;  // hard cap on worker processes; beyond it clients queue (queue_wait_ms)
  std::uint32_t start_timeout_ms = 60000;  // a worker not ready by then is killed and counted as failed
  // While every slot is held, a new client waits this long in a first-come, first-served queue
  // before it is refused BUSY (0: refused at once).
  std::uint32_t queue_wait_ms = 60000;
  // Sessions (queued or served) one uid may hold at once, the uid being the kernel's word for
  // the connecting process (SO_PEERCRED), not what its Hello claims; beyond it a new session is
  // refused BUSY with the reason. 0: no limit.
  std::uint32_t max_clients_per_uid = 0;
  std::vector<std::string> args;  // appended to every worker command line
};

// The kernel memory guard (ptx/guard.h): which policy each client's modules get.
struct GuardSection {
  // The policy of a client that asks for none: off|trap|poison|sink|remap_or|report.
  std::string policy = "trap";
  // Policies a client may ask for (Hello.guard_policy) besides `policy`. A client's
  // choice is safe to honour only among policies the operator accepts for the machine:
  // the guard protects AgileOS's state, not the client's.
  std::vector<std::string> allowed_policies;
  // With the guard on: "allow" loads a module that has only SASS unguarded (logged), but
  // only into a context without protected state, which then may not gain any while the
  // module is loaded (worker/handlers/module_loading.h); with protected state it is refused
  // whatever this says. "refuse" always fails its load naming the missing PTX.
  std::string sass_only = "allow";
  // "protected_state": guard a client's modules while its context holds protected state
  // (module state, MMIO, service memory, the test canary), which is when the guard has
  // something to protect: the protected range is otherwise unmapped, so any access there
  // faults anyway. "always": guard every module.
  std::string require = "protected_state";
  // Compiled guarded modules, shared by the workers; "" disables the cache. Entries are
  // authenticated with a key the daemon makes at each start (worker_control.proto,
  // ModuleCacheKey); client sandboxes must not see the directory.
  std::string cache_dir = "/var/cache/agileos/modules";
  std::uint64_t cache_max_bytes = 1ull << 30;
};

// Device memory per client (issue 14; seeds 002/003). With a quota, a client's worker charges it
// every byte mapped on its behalf (user and protected memory) and answers cudaMemGetInfo with
// it, and the daemon admits a client only while the quotas of the clients it serves plus this
// one fit the device's memory minus reserve_bytes; otherwise the client waits in the admission
// queue (worker.queue_wait_ms) and is then refused with the reason.
struct MemorySection {
  // Every client's quota, and the most a client may ask for (Hello.memory_quota_bytes, which
  // may only lower it). 0: no quota (a client may take what the device has; no capacity check
  // unless the client asks for a quota itself).
  std::uint64_t quota_bytes = 0;
  // Device memory never promised to clients (the workers' contexts, modules the driver loads,
  // the guard's pages): capacity = device memory - reserve_bytes.
  std::uint64_t reserve_bytes = 0;
  // Overrides of quota_bytes for the clients of a uid (the kernel's word, SO_PEERCRED): a
  // tenant with a bigger or smaller share. The JSON keys are decimal uids.
  std::map<std::uint32_t, std::uint64_t> per_uid;
  // Page-locked host memory (cudaMallocHost, cudaHostAlloc over the shared-memory transport),
  // which the kernel can neither swap nor reclaim. pinned_total_bytes: the most all clients
  // together may pin (0: half of the host's physical memory, read at daemon start).
  // pinned_per_client_bytes: each client's share (0: pinned_total_bytes / worker.max_workers,
  // at most 32 GiB). The daemon admits a client only while the shares of the clients it serves
  // plus its own fit the total, so the host's pinned memory never passes it.
  std::uint64_t pinned_total_bytes = 0;
  std::uint64_t pinned_per_client_bytes = 0;
};

// The pinned host memory budget in force: the total and each client's share, from the config,
// the host's physical memory and the number of worker slots (MemorySection).
struct PinnedHostBudget {
  std::uint64_t total_bytes = 0;
  std::uint64_t per_client_bytes = 0;
};
PinnedHostBudget resolvePinnedHostBudget(const MemorySection& memory, std::uint64_t host_memory_bytes,
                                         std::uint32_t max_workers);

// Privilege separation (issue 14). When agileosd runs as root, each worker process runs as an
// unprivileged uid of its own, and each service as another; both keep access to the GPU device
// nodes (their groups are added when the nodes are not open to everyone) and nothing else the
// daemon has. A uid is never shared by two live workers (two tenants' workers cannot signal or
// trace each other) and is handed out again only after every process that ran as it is killed.
// The ids need no passwd entries. A daemon that is not root cannot switch ids and says so.
struct PrivilegesSection {
  bool enabled = true;
  // Worker uids (and their primary gids, the same numbers): [worker_uid_base,
  // worker_uid_base + worker_uid_count). At least twice worker.max_workers (a retiring worker
  // keeps its uid until it is reaped).
  std::uint32_t worker_uid_base = 199100;
  std::uint32_t worker_uid_count = 128;
  // services[i] runs as uid and gid service_uid_base + i. Its state (e.g. the storage
  // service's --root) must belong to that uid.
  std::uint32_t service_uid_base = 199000;
  // The group of every worker and service: it owns the compiled-module cache (mode 2770) and
  // the service socket directory (2770), so workers share the one and reach the other, and
  // clients, whose uids are not in it, see neither.
  std::uint32_t shared_gid = 199099;
};

// Per-uid quota overrides (memory.per_uid): the quota of the clients whose connection the kernel
// reports with that uid, instead of quota_bytes (0: no quota for that uid).
std::uint64_t memoryQuotaFor(const MemorySection& memory, std::optional<std::uint32_t> peer_uid);

// The quota a client gets: the smaller of what it asks for (0 = nothing asked) and the daemon's
// for its uid (memoryQuotaFor).
std::uint64_t admitMemoryQuota(const MemorySection& memory, std::uint64_t requested,
                               std::optional<std::uint32_t> peer_uid = std::nullopt);

// Trusted library adapters (proto/adapters/adapter_declaration.h): which operations of which
// library a client may call. Each key is a library the build declares ("cufft", "nvrtc"),
// each value its admitted operations or ["*"] for all; a library not listed is not admitted.
// Absent section: every declared library, all operations.
struct AdaptersSection {
  std::map<std::string, std::vector<std::string>> admitted = {{"cufft", {"*"}}, {"nvrtc", {"*"}}};
};

// Protected modules (modules/catalog): what the daemon can load into a client's context and
// which of it clients may ask for (Hello.modules). Absent section: no modules at all.
struct ModulesSection {
  // Every entry validated (module_manifest.h invariants): unique names, dependencies present,
  // satisfied and acyclic, absolute artifact paths.
  agileos::modules::ModulePool pool;
  // Module names clients may use, or "*" for every module of the pool. A module is usable only
  // if everything it depends on is allowed too. Every name is a module of `pool`.
  std::vector<std::string> allowed;
};

// One service: a trusted helper process the daemon starts, supervises and stops, listening on
// <runtime_dir>/service-<name>.sock (scheduler/service_supervisor.h). Modules name it in their
// `service` key; their clients' workers connect to its socket.
struct ServiceConfig {
  std::string name;  // required; the syntax of a module name, unique among the services
  // Required. A relative path is resolved against the directory of the agileosd binary, like
  // worker.executable.
  std::string executable;
  std::vector<std::string> args;           // the daemon appends "--socket <path>"
  std::uint32_t start_timeout_ms = 10000;  // spawn -> its socket accepts; else a start failure
  std::uint32_t max_restarts = 5;          // restarts allowed within restart_window_s; beyond: failed
  std::uint32_t restart_window_s = 60;
};

// agileosd's admin API (scheduler/admin_service.h): a socket that root and one group reach.
struct AdminSection {
  bool enabled = true;
  // "" = <runtime_dir>-admin/admin.sock (adminSocketPath). Never in the clients' socket
  // directory or the runtime directory, which sandboxes see (checkConsistency).
  std::string socket_path;
  // The group that may use the admin API besides root: the socket is root's, mode 0660, this
  // group's (0: root's group only).
  std::uint32_t gid = 0;
};

// The Prometheus metrics endpoint (scheduler/daemon_metrics.h).
struct MetricsSection {
  // "host:port" the HTTP endpoint /metrics listens on, e.g. "127.0.0.1:9464"; "" = none (the
  // admin API's GetMetrics still serves the same text).
  std::string listen;
};

struct DaemonConfig {
  std::string socket_path = "/run/agileos/agileosd.sock";
  // Worker sockets: <runtime_dir>/worker-<id>/call.sock (and call.shm.sock); service sockets:
  // <runtime_dir>-services/service-<name>.sock.
  std::string runtime_dir = "/run/agileos";
  std::string log_level = "info";       // trace|debug|info|warn|error
  std::string placement = "dedicated";  // the only policy so far
  // The audit trail (scheduler/audit_log.h): an absolute path of a JSON-lines file the daemon
  // appends to; empty: none.
  std::string audit_log;
  WorkerConfig worker;
  GuardSection guard;
  MemorySection memory;
  PrivilegesSection privileges;
  AdaptersSection adapters;
  ModulesSection modules;
  // Started in this order at daemon start; every module's non-empty `service` names one of them.
  std::vector<ServiceConfig> services;
  AdminSection admin;
  MetricsSection metrics;
};

// The devices served: worker.devices, or [worker.device] when it is empty.
std::vector<int> servedDevices(const DaemonConfig& config);

// The admin socket's path: admin.socket_path, or <runtime_dir>-admin/admin.sock when it is empty.
std::string adminSocketPath(const DaemonConfig& config);

// The admitted operations as the worker takes them: "library.operation" or "library.*".
std::vector<std::string> admittedAdapterOperations(const AdaptersSection& adapters);

// Guard policy names the config and clients may use.
std::string checkGuardPolicy(std::string_view value);
// The policy for a client that asked for `requested` ("" = the default), or an error.
bool admitGuardPolicy(const GuardSection& guard, const std::string& requested, std::string* policy,
                      std::string* error);

// Either a valid config or at least one error; each error reads "<key path>: <problem>".
struct ConfigResult {
  std::optional<DaemonConfig> config;
  std::vector<std::string> errors;

  bool ok() const { return config.has_value(); }
};

// Parses and validates JSON text. Never throws.
ConfigResult parseDaemonConfig(std::string_view json_text);

// Reads `path` and parses it. An unreadable file is an error naming the path.
ConfigResult loadDaemonConfig(const std::string& path);

// The effective config as JSON (every field, defaults included), for --check-config.
std::string toJsonText(const DaemonConfig& config);

// Field validators shared with the command-line overrides. Each returns an empty string when
// `value` is acceptable, else the problem (without the key path).
std::string checkLogLevel(std::string_view value);
std::string checkSocketPath(std::string_view value);

// Cross-field checks that must hold after overrides are applied (e.g. prestart <= max_workers,
// every module's service is configured, every service socket path fits a socket address).
std::vector<std::string> checkConsistency(const DaemonConfig& config);

}  // namespace agileos::scheduler
