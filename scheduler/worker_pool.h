// WorkerPool: starts, supervises and retires agileos-worker processes, and places clients on
// them through a PlacementPolicy.
//
// One supervisor thread owns every process: it spawns workers (so PR_SET_PDEATHSIG is tied to
// a thread that lives as long as the pool), polls their control channels, reaps exits with
// waitpid, enforces deadlines (start, attach, release, shutdown grace) and escalates
// shutdown -> SIGTERM -> SIGKILL. Session threads only queue requests and wait.
//
// Client lifecycle (tables are keyed by client id; a worker holds a set of clients):
//   acquire(): queued -> placed on a worker (waiting for it to be ready) -> attach sent ->
//              attached (Assignment can be sent) | refused
//   release(): release sent -> released (the worker then retires if the policy says so)
//   A worker that dies while a client is attached ends that client's session through the
//   client's SessionEndedCallback.
//
// Worker lifecycle: starting -> ready -> retiring -> exiting -> reaped. A worker that fails to
// start (sends failed, exits, or misses start_timeout) is logged with its reason and replaced
// after an exponential backoff, so a broken worker binary cannot make the pool spin. The pool
// keeps `prestart` spare workers, never more than `max_workers` processes in all.
//
// Thread-safety: all public methods are safe to call from any thread.
// Process-wide effect: start() sets SIGPIPE to SIG_IGN (writing to a dead worker must fail with
// an error, not kill the daemon).
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/device_choice.h"
#include "scheduler/endpoint_owner.h"
#include "scheduler/ids.h"
#include "scheduler/placement_policy.h"
#include "scheduler/process_credentials.h"
#include "scheduler/worker_process.h"
#include "scheduler/worker_usage.h"

namespace agileos::scheduler {

// What the pool tells PoolOptions::on_event.
struct PoolEvent {
  enum class Kind { kWorkerTainted, kWorkerDrained, kGuardHits };
  Kind kind = Kind::kWorkerTainted;
  WorkerId worker = 0;
  ClientId client = 0;           // kGuardHits
  std::uint64_t guard_hits = 0;  // kGuardHits: the client's count so far
  std::uint64_t new_hits = 0;    // kGuardHits: since the last report
  std::string reason;            // kWorkerTainted, kWorkerDrained
  std::string policy;            // kGuardHits: the client's guard policy
};

struct PoolOptions {
  std::string worker_executable;  // resolved path of agileos-worker
  std::vector<std::string> worker_args;
  std::string runtime_dir;  // worker sockets: <runtime_dir>/worker-<id>/call.sock and call.shm.sock
  // The CUDA device ordinals this pool serves (worker.devices), each with workers of its own; a
  // client goes to one of them (device_choice.h) and sees only that one.
  std::vector<int> devices = {0};
  std::string worker_log_level = "info";
  std::size_t prestart = 1;  // spare workers per device
  std::size_t max_workers = 4;
  std::chrono::milliseconds start_timeout{60000};  // spawn -> ready; also a client's wait for a worker
  // Admission queue: while every worker slot is held by active clients, a new client waits
  // first come, first served for this long (0: it is refused BUSY at once), then is refused
  // BUSY with the reason.
  std::chrono::milliseconds queue_wait{60000};
  // Capacity admission: a client with a quota is placed only while the quotas of the placed
  // clients plus its own fit the device's memory (reported by the workers) minus this.
  std::uint64_t memory_reserve_bytes = 0;
  // ... and only while the pinned host memory shares of the placed clients plus its own fit
  // this (MemorySection::pinned_total_bytes, resolved); 0: no host-wide check.
  std::uint64_t pinned_host_total_bytes = 0;
  std::chrono::milliseconds reply_timeout{10000};   // attach -> attached, release -> released
  std::chrono::milliseconds shutdown_grace{5000};   // shutdown message -> SIGTERM
  std::chrono::milliseconds terminate_grace{2000};  // SIGTERM -> SIGKILL
  std::chrono::milliseconds initial_backoff{500};   // after the first start failure; doubles per failure
  std::chrono::milliseconds max_backoff{30000};
  // Service name -> the unix socket it listens on (ServiceSupervisor::socketPath). An admitted
  // module's service goes to the worker as this path; a client with a module whose service is
  // not here is refused.
  std::map<std::string, std::string> service_sockets;
  // The compiled-module cache's entry-authentication key (32 bytes, made by the daemon at start;
  // empty: none). Sent as each worker's first control message, right after it is spawned, never
  // on its command line or in its environment.
  std::string module_cache_key;
  // Privilege separation (PrivilegesSection in daemon_config.h): when set, each worker runs as
  // a uid of [uid_base, uid_base + uid_count) that no other live worker holds, with the same
  // number as its gid and `groups` (the shared group, the GPU device nodes' groups) as its
  // supplementary groups. A uid goes back to the range once its worker is reaped and every
  // process left running as it is killed. Unset: workers run as the daemon.
  struct Identities {
    uid_t uid_base = 0;
    std::uint32_t uid_count = 0;
    std::vector<gid_t> groups;
    // Host-wide leases of the uids (UidRange); "" for none. The daemon makes it root's, 0700.
    std::string lease_dir;
  };
  std::optional<Identities> identities;
  // Told of what the operator must be able to trace (the audit trail): a worker tainted or
  // drained, new kernel memory guard hits of a client. Called on the supervisor thread with the
  // pool's lock held: it must only record, never call back into the pool. Null: nobody is told.
  std::function<void(const PoolEvent&)> on_event;
};

// Called at most once per client, from the supervisor thread with the pool's lock held, when
// the client's worker dies or the pool stops while the client is attached. It must only record
// the reason and wake someone; it must not call back into the pool. It is never called after
// release() for that client has returned.
using SessionEndedCallback = std::function<void(const std::string& reason)>;

struct AcquireResult {
  bool assigned = false;
  WorkerId worker = 0;
  std::string endpoint;                          // gRPC target of the worker's call service
  RefusalKind refusal = RefusalKind::kInternal;  // when !assigned
  std::string message;                           // when !assigned
  std::string shm_endpoint;                      // the worker's shared-memory socket; empty if none
};

struct WorkerSnapshot {
  WorkerId id = 0;
  pid_t pid = 0;
  WorkerPhase phase = WorkerPhase::kStarting;
  std::string endpoint;
  std::vector<ClientId> clients;  // every client the worker holds, releasing ones included
  bool has_served = false;
  bool tainted = false;
  std::string taint_reason;  // when tainted
  bool draining = false;
  std::string drain_reason;  // when draining
  std::optional<uid_t> uid;  // its own uid (PoolOptions::identities); none: the daemon's
  CallTotals calls;          // its calls since it started, as last reported
  int device = 0;            // the CUDA device ordinal it opened
};

// A client as the pool holds it, with what its worker last reported of it.
struct ClientSnapshot {
  ClientId id = 0;
  std::string state;          // "queued", "awaiting_worker", "attaching", "attached", "releasing", "ended"
  WorkerId worker = 0;        // 0 while queued
  std::optional<int> device;  // once placed
  std::uint64_t memory_quota_bytes = 0;
  std::optional<uid_t> peer_uid;
  std::chrono::milliseconds waited{0};  // in the admission queue, so far (while queued)
  std::optional<ClientUsage> usage;     // none until its worker has reported
};

struct PoolCounters {
  std::uint64_t spawned = 0;  // processes started
  std::uint64_t became_ready = 0;
  // Spawn errors, failed{} messages, start timeouts, and deaths of workers that never served.
  std::uint64_t start_failures = 0;
  std::uint64_t reaped = 0;
  std::uint64_t sigterm_sent = 0;
  std::uint64_t sigkill_sent = 0;
  std::uint64_t tainted = 0;  // workers tainted
  std::uint64_t drained = 0;  // workers drained by an administrator
  std::uint64_t retired = 0;  // workers asked to shut down (idle, tainted, drained, at stop)
};

struct PoolSnapshot {
  std::vector<WorkerSnapshot> workers;      // id order
  std::size_t clients = 0;                  // client entries of any state
  std::vector<ClientSnapshot> client_list;  // id order; refused ones left out
  std::size_t queued = 0;                   // clients waiting in the admission queue
  std::size_t attached = 0;                 // clients attached to their worker
  std::vector<int> devices;                 // the CUDA device ordinals served (PoolOptions::devices)
  CallTotals calls;                         // every worker's calls, the reaped ones' included (monotonic)
  PoolCounters counters;
  std::uint32_t consecutive_start_failures = 0;
  std::chrono::milliseconds current_backoff{0};  // 0 when the last start succeeded
  std::string last_start_failure;
};

// One protected module admitted for a client (modules/catalog admitModules), as the worker gets
// it in AttachClient.modules. Every field comes from the daemon's module pool (trusted), none
// from the client.
struct AdmittedModuleSetting {
  std::string name;
  std::string version;  // "MAJOR.MINOR.PATCH"
  std::string ptx_path;
  std::string host_library_path;
  std::string service;  // the service's name (config); the worker gets its socket path instead
};

// What the daemon admitted for one client, sent with its attach: the kernel memory guard
// setting, the library adapter operations it may call and its protected modules.
struct ClientAttachSetting {
  std::string policy = "off";  // off|trap|poison|sink|remap_or|report
  bool allow_sass_only = true;
  bool always = false;  // guard every module, not only while the context holds protected state
  std::vector<std::string> adapter_operations;  // "library.operation" or "library.*"
  // In load order (each after its dependencies); the attach carries them in this order.
  std::vector<AdmittedModuleSetting> modules;
  // The client's device-memory quota (MemorySection); 0: none. Admitted only while it fits the
  // device's capacity (PoolOptions::memory_reserve_bytes).
  std::uint64_t memory_quota_bytes = 0;
  // The device the client asked for (Hello.device, one of PoolOptions::devices); none: the pool
  // chooses (device_choice.h).
  std::optional<int> device;
  // The client's uid as the kernel reported it on the daemon's socket (SO_PEERCRED); the worker
  // lets only this uid (and root) reach its endpoints. nullopt: unknown (in-process tests).
  std::optional<uid_t> peer_uid;
  // The most page-locked host memory the client may hold; admitted only while it fits
  // PoolOptions::pinned_host_total_bytes with the other clients' shares. nullopt: the worker's
  // built-in bound, not counted host-wide (in-process tests).
  std::optional<std::uint64_t> pinned_host_quota_bytes;
};

class WorkerPool {
 public:
  WorkerPool(PoolOptions options, std::unique_ptr<PlacementPolicy> policy);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts the supervisor thread, which starts the prestart workers. Call once.
  void start();

  // Refuses waiting clients, ends attached sessions ("daemon shutting down"), shuts every
  // worker down (escalating to SIGKILL) and returns once all are reaped. Idempotent.
  void stop();

  // Places `client` and attaches it to a worker, blocking until it is attached or refused
  // (at most about 2 * start_timeout + reply_timeout: a free slot, a worker start, the attach).
  // `client` must be new. `on_ended` may be called before acquire() returns.
  // `guard` is passed to the worker with the attach.
  // `gone`, when set, is polled while the client waits in the admission queue: once it says the
  // client has gone, the client leaves the queue and is refused (nothing else remains of it).
  AcquireResult acquire(ClientId client, std::string session_token, SessionEndedCallback on_ended,
                        ClientAttachSetting guard = {}, std::function<bool()> gone = {});

  // Ends an assigned client's use of its worker (asynchronously: the worker is told and then
  // retired as the policy says). No-op for unknown or refused clients.
  void release(ClientId client);

  PoolSnapshot snapshot() const;

  // Drains `worker`: it takes no new clients and retires once its clients are gone (a spare
  // retires at once and is replaced). False with *error if there is no such worker or it is
  // already going away.
  bool drain(WorkerId worker, const std::string& reason, std::string* error);

 private:
  using Clock = std::chrono::steady_clock;

  enum class ClientState {
    kQueued,            // waiting for placement
    kAwaitingWorker,    // placed on a worker that is not ready yet
    kAttaching,         // attach sent, waiting for attached
    kAttached,          // serving; acquire() has returned the assignment
    kReleaseRequested,  // release() called; release message not yet sent
    kReleasing,         // release sent, waiting for released
    kEnded,             // its worker is gone; waiting for release() to drop the entry
    kRefused,           // outcome is a refusal; acquire() drops the entry
  };
  static const char* stateName(ClientState state);
  // Whether a client in `state` holds a promise of capacity: placed, attached, or not yet released
  // by its worker.
  static bool holdsCapacity(ClientState state);

  struct Client {
    ClientId id = 0;
    std::string token;
    SessionEndedCallback on_ended;
    ClientAttachSetting guard;
    ClientState state = ClientState::kQueued;
    WorkerId worker = 0;
    Clock::time_point deadline;  // for the current state, where it has one
    std::optional<AcquireResult> outcome;
    Clock::time_point queued_at;       // when acquire() queued it
    std::optional<ClientUsage> usage;  // its worker's last report
  };

  struct Worker {
    WorkerId id = 0;
    std::unique_ptr<WorkerProcess> process;
    WorkerPhase phase = WorkerPhase::kStarting;
    int device = 0;  // the CUDA device ordinal it was started for
    std::string endpoint;
    std::string socket_dir;    // <runtime_dir>/worker-<id>: made before the spawn, removed when reaped
    std::string socket_path;   // file the worker binds; removed when it is reaped
    std::string shm_endpoint;  // shared-memory socket it reported ready (a file; removed when reaped)
    std::optional<uid_t> uid;  // its own uid (PoolOptions::identities); none: the daemon's
    uid_t runsAs() const { return uid.value_or(::geteuid()); }
    // Its sockets as recorded at ready (endpoint_owner.h): what attach and release give away.
    std::vector<EndpointFile> endpoint_files;
    std::set<ClientId> clients;
    bool has_served = false;
    bool tainted = false;
    std::string taint_reason;
    bool draining = false;
    std::string drain_reason;
    CallTotals calls;  // its last usage report's
    bool sigterm_sent = false;
    Clock::time_point deadline;  // starting: ready by; retiring: next escalation
    // Set when the control channel reached EOF outside retirement: reaped by then, or killed.
    std::optional<Clock::time_point> exit_deadline;
    std::string end_reason;  // why it is going away, once known
  };

  // Supervisor thread; each helper below runs on it with mu_ held.
  void superviseLoop();
  void beginStop();
  void reapExited();
  void readControlMessage(Worker& worker);
  void handleMessage(Worker& worker, const agileos::v1::internal::WorkerToDaemon& message);
  void enforceDeadlines();
  void sendPendingReleases();
  void schedulePendingClients();
  void retireIdleWorkers();
  void replenishSpares();
  Clock::duration nextWakeup() const;
  // The socket directory, credentials and uid of a worker about to be spawned; false with *error.
  bool prepareWorkerFiles(Worker& worker, WorkerLaunchSpec* spec, std::string* error);
  // Records the worker's sockets at ready; "" or why they cannot be trusted.
  std::string recordEndpoints(Worker& worker);
  // Gives the worker's sockets to `uid`; "" or the failure.
  std::string giveEndpoints(const Worker& worker, uid_t uid);
  // Removes the worker's sockets and directory, clears its uid's processes and frees the uid.
  void releaseWorkerFiles(Worker& worker);
  // Capacity admission (PoolOptions::memory_reserve_bytes): "" if `client` fits now, else why not.
  // The device `client` would go to now (device_choice.h), or why none can take it.
  DeviceChoice chooseDeviceFor(const Client& client) const;
  std::vector<DeviceLoad> deviceLoads() const;
  std::string pinnedHostShortfall(const Client& client) const;
  // Whether the placement policy would make a new client wait for a worker slot now.
  bool everySlotHeld() const;
  // The sum of `amountOf` over the clients that hold a promise of capacity: placed, attached, or
  // not yet released by their worker.
  std::uint64_t promisedToPlacedClients(
      const std::function<std::uint64_t(const ClientAttachSetting&)>& amountOf) const;
  // How long a queued client waits before it is refused (its deadline in kQueued).
  std::chrono::milliseconds queueWait() const;

  Worker* spawnWorker(int device, std::string* error);
  void placeOnWorker(Worker& worker, Client& client);
  void sendAttach(Worker& worker, Client& client);
  bool sendToWorker(Worker& worker, const agileos::v1::internal::DaemonToWorker& message);
  void beginRetire(Worker& worker, const std::string& reason);
  // The worker is dead or must die now: SIGKILL it, end or refuse its clients.
  void markWorkerLost(Worker& worker, const std::string& reason);
  void taint(Worker& worker, const std::string& reason);
  // Keeps a usage report (taints the worker if it breaks the rules of worker_usage.h).
  void recordUsage(Worker& worker, const agileos::v1::internal::WorkerUsage& report);
  void notify(const PoolEvent& event) const;
  void noteStartFailure(const std::string& reason);
  void refuse(Client& client, RefusalKind kind, const std::string& message);
  void detachClient(Client& client);
  void setPhase(Worker& worker, WorkerPhase phase);
  void setClientState(Client& client, ClientState state);
  // What the placement policy sees for `device`: its workers, and the slots of max_workers that
  // the other devices' workers leave.
  PoolSummary summary(int device) const;
  // Spare workers of `device` (PlacementPolicy::isSpare).
  std::size_t sparesOf(int device) const;
  WorkerSummary summarize(const Worker& worker) const;
  Client* findClient(ClientId id);
  Worker* findWorker(WorkerId id);
  void wakeSupervisor();

  const PoolOptions options_;
  const std::unique_ptr<PlacementPolicy> policy_;

  mutable std::mutex mu_;
  std::condition_variable outcome_cv_;  // acquire() waiters
  std::map<WorkerId, Worker> workers_;
  std::map<ClientId, Client> clients_;
  std::deque<ClientId> queue_;  // kQueued clients, FIFO
  // Each device's memory as its first ready worker reported it; absent: unknown yet.
  std::map<int, std::uint64_t> device_memory_bytes_;
  std::string capacity_wait_reason_;  // why the first in line waits for capacity; "" if it does not
  WorkerId next_worker_id_ = 1;
  std::optional<UidRange> worker_uids_;  // with PoolOptions::identities
  bool started_ = false;
  bool stopping_ = false;
  bool stop_begun_ = false;  // beginStop() ran on the supervisor
  PoolCounters counters_;
  CallTotals reaped_calls_;  // the calls of every reaped worker
  std::uint32_t consecutive_start_failures_ = 0;
  std::chrono::milliseconds current_backoff_{0};
  Clock::time_point next_start_allowed_{};
  std::string last_start_failure_;

  int wake_fd_ = -1;  // eventfd; written to wake the supervisor out of poll()
  std::thread supervisor_;
  std::mutex stop_mu_;  // serializes stop() callers
};

}  // namespace agileos::scheduler
