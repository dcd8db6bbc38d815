// SessionRunner: the daemon's side of one client's Session stream, from Hello to release.
//
//   1. The first message must be Hello with protocol_version == PROTOCOL_VERSION_CURRENT
//      (else Refusal BAD_REQUEST / VERSION_MISMATCH), within `hello_timeout` (else the stream
//      is cancelled). A stream that ends before Hello costs nothing: no id, no token, no worker.
//      The Hello's guard policy and modules are then admitted (guard, modules sections of the
//      config), else Refusal BAD_REQUEST naming the reason; a client whose modules need a
//      service that is down gets Refusal UNAVAILABLE naming it, at once rather than after its
//      worker's connect to the service has timed out. Nothing is placed for a refused client.
//   2. A client id (monotonic) and a 32-byte session token are minted and the pool places and
//      attaches the client; the answer is exactly one Assignment or Refusal.
//   3. The stream then stays open. When the client ends it (exit, crash, half-close), the
//      client is released. When the client's worker dies or the daemon stops, the client gets
//      SessionEnded{reason} and `end_grace` to close its side before the stream is cancelled.
//      Any further message from the client is a protocol violation and cancels the stream.
//   Every path that placed the client ends with WorkerPool::release().
//
// Thread-safety: run() may be called concurrently for different streams. Each run() uses the
// calling thread plus one watcher thread while the client is assigned.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "scheduler/daemon_config.h"
#include "scheduler/ids.h"
#include "scheduler/session_stream.h"
#include "scheduler/worker_pool.h"

namespace agileos::scheduler {

class AuditLog;         // scheduler/audit_log.h
class SessionRegistry;  // scheduler/session_registry.h

struct SessionOptions {
  // After SessionEnded is sent, how long the client has to close its side of the stream.
  std::chrono::milliseconds end_grace{2000};
  // How long a new stream may stay silent before its Hello; then it is cancelled, so that
  // silent streams cannot hold the daemon's handler threads.
  std::chrono::milliseconds hello_timeout{5000};
  // Which kernel memory guard policy a client gets, and which it may ask for.
  GuardSection guard;
  // Each client's device-memory quota.
  MemorySection memory;
  // Each client's share of the host's pinned memory (resolvePinnedHostBudget); nullopt: the
  // worker's built-in bound.
  std::optional<std::uint64_t> pinned_host_quota_bytes;
  // Sessions one uid (SO_PEERCRED) may hold at once; 0: no limit (WorkerConfig).
  std::uint32_t max_clients_per_uid = 0;
  // The devices a client may ask for (Hello.device; PoolOptions::devices). Empty: any (tests).
  std::vector<int> devices;
  // Which library adapter operations a client may call.
  AdaptersSection adapters;
  // Which protected modules a client may ask for (Hello.modules), from which pool.
  ModulesSection modules;
  // Why service `name` cannot serve a new client ("" when it can): the daemon asks its service
  // supervisor (ServiceSupervisor::unavailableReason). Null: every service counts as available.
  std::function<std::string(const std::string& name)> service_unavailable;
  // The audit trail (config audit_log): session starts with the kernel's identity of the peer,
  // refusals with their reasons, ends. Null: none.
  std::shared_ptr<AuditLog> audit;
  // The live sessions and the session counters (admin API, metrics). Null: none kept.
  std::shared_ptr<SessionRegistry> registry;
};

class SessionRunner {
 public:
  // `pool` must outlive every run() call.
  SessionRunner(WorkerPool& pool, SessionOptions options)
      : pool_(pool),
        options_(std::move(options)),
        modules_(std::make_shared<const ModulesSection>(options_.modules)) {}

  // Serves one stream until it is over.
  void run(SessionStream& stream);

  // The module pool and allowed list new sessions are admitted against (SessionOptions::modules
  // until replaced). A replacement applies to sessions whose Hello is admitted after it; live
  // sessions keep what they were admitted with.
  std::shared_ptr<const ModulesSection> modules() const;
  void setModules(ModulesSection modules);

 private:
  // Records a refusal in the audit trail, if there is one.
  void auditRefusal(SessionStream& stream, const std::optional<PeerCredentials>& peer,
                    const std::string& program, agileos::v1::Refusal::Reason code, const std::string& reason);
  // Refuses the session: the operational log, the audit trail and the client all get `reason`.
  void refuse(SessionStream& stream, const std::optional<PeerCredentials>& peer, const std::string& program,
              agileos::v1::Refusal::Reason code, const std::string& reason);
  // Takes one of `uid`'s places (max_clients_per_uid); false if it holds them all.
  bool takeUidPlace(uid_t uid);
  void giveUidPlace(uid_t uid);

  WorkerPool& pool_;
  const SessionOptions options_;
  std::atomic<ClientId> next_client_id_{1};
  std::mutex uid_places_mu_;
  std::map<uid_t, std::uint32_t> uid_places_;  // uid -> sessions it holds; no zero entries
  mutable std::mutex modules_mu_;
  std::shared_ptr<const ModulesSection> modules_;  // under modules_mu_; never null
};

}  // namespace agileos::scheduler
