// WorkerPool, process side: spawning workers, handling their control messages, reaping them,
// retiring them, and what happens to their clients when one is lost.
// Every function here runs on the supervisor thread with the pool's lock held.
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "proto/shm/handshake.h"
#include "scheduler/worker_pool.h"

namespace agileos::scheduler {
namespace {

using agileos::v1::internal::DaemonToWorker;
using agileos::v1::internal::WorkerToDaemon;

// A worker that closed its control channel must have exited by then, or it is killed.
constexpr auto kExitAfterEofGrace = std::chrono::milliseconds(1000);
// Longest worker-supplied text (failure reasons) copied into logs and client messages.
constexpr std::size_t kMaxWorkerTextBytes = 512;

std::string msText(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// Worker text is trusted but may be long or carry control characters; keep logs one line each.
std::string printable(const std::string& text) {
  std::string out;
  for (char ch : text.substr(0, kMaxWorkerTextBytes)) {
    out += (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ? '?' : ch;
  }
  if (text.size() > kMaxWorkerTextBytes) out += "...";
  return out;
}

}  // namespace

void WorkerPool::reapExited() {
  std::vector<WorkerId> reaped;
  for (auto& [id, worker] : workers_) {
    const std::optional<int> status = worker.process->tryReap();
    if (!status) continue;
    // Read what it said before dying (a failed{} reason is worth more than "exited with 1").
    while (worker.process->controlFd() >= 0) {
      pollfd pending{worker.process->controlFd(), POLLIN, 0};
      if (::poll(&pending, 1, 0) <= 0) break;
      WorkerToDaemon message;
      if (worker.process->receive(&message) != wire::FrameStatus::kOk) break;
      handleMessage(worker, message);
    }
    const std::string how = describeWaitStatus(*status);
    if (worker.phase != WorkerPhase::kExiting && worker.phase != WorkerPhase::kRetiring) {
      markWorkerLost(worker, how);
    }
    spdlog::info("worker {} (pid {}): reaped, {} ({})", id, worker.process->pid(), how,
                 worker.end_reason.empty() ? "no reason recorded" : worker.end_reason);
    ++counters_.reaped;
    reaped.push_back(id);
  }
  for (WorkerId id : reaped) {
    Worker& worker = workers_.at(id);
    reaped_calls_.add(worker.calls);  // the pool's totals stay monotonic
    worker.process->closeControl();
    releaseWorkerFiles(worker);
    workers_.erase(id);
  }
}

void WorkerPool::readControlMessage(Worker& worker) {
  WorkerToDaemon message;
  const wire::FrameStatus status = worker.process->receive(&message);
  if (status == wire::FrameStatus::kOk) return handleMessage(worker, message);
  if (status == wire::FrameStatus::kClosed) {
    worker.process->closeControl();
    if (worker.phase == WorkerPhase::kRetiring) {
      spdlog::debug("worker {} (pid {}): closed its control channel while retiring", worker.id,
                    worker.process->pid());
      return;  // expected; the shutdown escalation deadline still applies
    }
    // Probably exiting: give it a moment so the loss is reported with its exit status.
    worker.exit_deadline = Clock::now() + kExitAfterEofGrace;
    spdlog::debug("worker {} (pid {}): control channel closed", worker.id, worker.process->pid());
    return;
  }
  markWorkerLost(worker, std::string("control channel error: ") + wire::toString(status));
}

void WorkerPool::handleMessage(Worker& worker, const WorkerToDaemon& message) {
  if (worker.phase == WorkerPhase::kRetiring || worker.phase == WorkerPhase::kExiting) {
    // It holds no clients any more; late replies (a ready racing the shutdown) change nothing.
    spdlog::debug("worker {} (pid {}): ignoring a control message while {}", worker.id, worker.process->pid(),
                  toString(worker.phase));
    return;
  }
  switch (message.msg_case()) {
    case WorkerToDaemon::kReady: {
      if (worker.phase != WorkerPhase::kStarting) {
        return taint(worker, "sent ready while " + std::string(toString(worker.phase)));
      }
      // The endpoints are the daemon's choice: a worker (unprivileged, maybe compromised) must
      // not make the daemon give away, or remove, a file of its choosing.
      const std::string& reported = message.ready().endpoint();
      if (!reported.empty() && reported != worker.endpoint) {
        return markWorkerLost(
            worker, "listens on " + printable(reported) + " instead of the requested " + worker.endpoint);
      }
      const std::string expected_shm = shm::shmSocketPathFor(worker.endpoint).value_or("");
      const std::string& reported_shm = message.ready().shm_endpoint();
      if (!reported_shm.empty() && reported_shm != expected_shm) {
        return markWorkerLost(worker, "reported the shared-memory endpoint " + printable(reported_shm) +
                                          " instead of " + expected_shm);
      }
      worker.shm_endpoint = reported_shm;
      if (std::string problem = recordEndpoints(worker); !problem.empty())
        return markWorkerLost(worker, problem);
      // A worker on another GPU than the one it was started for would put its clients where the
      // capacity accounting does not look.
      if (message.ready().device() != worker.device) {
        return markWorkerLost(worker, "reported device " + std::to_string(message.ready().device()) +
                                          " instead of the requested " + std::to_string(worker.device));
      }
      if (message.ready().device_memory_bytes() != 0)
        device_memory_bytes_[worker.device] = message.ready().device_memory_bytes();
      setPhase(worker, WorkerPhase::kReady);
      spdlog::info("worker {} (pid {}): device {} ({}) at {}", worker.id, worker.process->pid(),
                   message.ready().device(), printable(message.ready().device_name()), worker.endpoint);
      ++counters_.became_ready;
      consecutive_start_failures_ = 0;
      current_backoff_ = std::chrono::milliseconds(0);
      const std::vector<ClientId> waiting(worker.clients.begin(), worker.clients.end());
      for (ClientId id : waiting) {
        Client* client = findClient(id);
        if (client == nullptr || client->state != ClientState::kAwaitingWorker) continue;
        if (worker.phase != WorkerPhase::kReady) break;  // a failed attach lost the worker
        sendAttach(worker, *client);
      }
      return;
    }
    case WorkerToDaemon::kFailed:
      return markWorkerLost(worker, "failed to start: " + printable(message.failed().reason()));
    case WorkerToDaemon::kAttached: {
      Client* client = findClient(message.attached().client_id());
      if (client == nullptr || client->worker != worker.id || client->state != ClientState::kAttaching) {
        return taint(worker, "acknowledged an attach of client " +
                                 std::to_string(message.attached().client_id()) + " it was not asked for");
      }
      if (client->guard.peer_uid) {
        if (std::string problem = giveEndpoints(worker, *client->guard.peer_uid); !problem.empty()) {
          return markWorkerLost(
              worker, "cannot give its endpoints to client " + std::to_string(client->id) + ": " + problem);
        }
      }
      setClientState(*client, ClientState::kAttached);
      client->outcome =
          AcquireResult{true, worker.id, worker.endpoint, RefusalKind::kInternal, "", worker.shm_endpoint};
      outcome_cv_.notify_all();
      spdlog::info("client {}: attached to worker {} (pid {})", client->id, worker.id, worker.process->pid());
      return;
    }
    case WorkerToDaemon::kReleased: {
      Client* client = findClient(message.released().client_id());
      if (client == nullptr || client->worker != worker.id || client->state != ClientState::kReleasing) {
        return taint(worker, "acknowledged a release of client " +
                                 std::to_string(message.released().client_id()) + " it was not asked for");
      }
      const ClientId id = client->id;
      spdlog::info("client {}: released by worker {} (pid {})", id, worker.id, worker.process->pid());
      detachClient(*client);
      clients_.erase(id);
      return;
    }
    case WorkerToDaemon::kTainted:
      return taint(worker, "reported its context untrusted (client " +
                               std::to_string(message.tainted().client_id()) +
                               "): " + printable(message.tainted().reason()));
    case WorkerToDaemon::kUsage:
      return recordUsage(worker, message.usage());
    case WorkerToDaemon::MSG_NOT_SET:
      break;
  }
  taint(worker, "sent an empty or unknown control message");
}

void WorkerPool::recordUsage(Worker& worker, const agileos::v1::internal::WorkerUsage& report) {
  std::string error;
  std::optional<ParsedWorkerUsage> parsed = parseWorkerUsage(report, worker.clients, &error);
  if (!parsed) return taint(worker, "sent a usage report that breaks the rules: " + error);
  if (!neverDecreases(worker.calls, parsed->calls))
    return taint(worker, "sent a usage report whose cumulative counts went back");
  worker.calls = std::move(parsed->calls);
  for (const auto& [id, usage] : parsed->clients) {
    Client* client = findClient(id);
    if (client == nullptr) continue;
    const std::uint64_t before = client->usage ? client->usage->guard_hits : 0;
    if (usage.guard_hits > before) {
      spdlog::warn("client {} (worker {}): {} new kernel memory guard hit(s), {} in all", id, worker.id,
                   usage.guard_hits - before, usage.guard_hits);
      notify(PoolEvent{PoolEvent::Kind::kGuardHits, worker.id, id, usage.guard_hits,
                       usage.guard_hits - before, "", client->guard.policy});
    }
    client->usage = usage;
  }
}

WorkerPool::Worker* WorkerPool::spawnWorker(int device, std::string* error) {
  const WorkerId id = next_worker_id_++;
  Worker candidate;
  candidate.id = id;
  candidate.device = device;
  WorkerLaunchSpec spec;
  spec.executable = options_.worker_executable;
  spec.worker_id = id;
  spec.device = device;
  spec.log_level = options_.worker_log_level;
  spec.extra_args = options_.worker_args;
  if (!prepareWorkerFiles(candidate, &spec, error)) {
    spdlog::error("worker {}: cannot start: {}", id, *error);
    releaseWorkerFiles(candidate);
    return nullptr;
  }
  std::unique_ptr<WorkerProcess> process = WorkerProcess::spawn(spec, error);
  if (!process) {
    spdlog::error("worker {}: cannot start: {}", id, *error);
    releaseWorkerFiles(candidate);
    return nullptr;
  }
  if (!options_.module_cache_key.empty()) {
    DaemonToWorker key;
    key.mutable_module_cache_key()->set_key(options_.module_cache_key);
    if (const wire::FrameStatus sent = process->send(key); sent != wire::FrameStatus::kOk) {
      *error = std::string("cannot hand the worker its module cache key: ") + wire::toString(sent);
      spdlog::error("worker {}: {}", id, *error);
      process.reset();  // killed and reaped before its uid and files go
      releaseWorkerFiles(candidate);
      return nullptr;
    }
  }
  ++counters_.spawned;
  Worker& worker = workers_[id];
  worker = std::move(candidate);
  worker.process = std::move(process);
  worker.endpoint = spec.endpoint;
  worker.deadline = Clock::now() + options_.start_timeout;
  spdlog::info("worker {} (pid {}): starting as uid {}, endpoint {}", id, worker.process->pid(),
               worker.uid ? std::to_string(*worker.uid) : std::string("of the daemon"), worker.endpoint);
  return &worker;
}

void WorkerPool::sendAttach(Worker& worker, Client& client) {
  DaemonToWorker message;
  message.mutable_attach()->set_client_id(client.id);
  message.mutable_attach()->set_session_token(client.token);
  message.mutable_attach()->set_guard_policy(client.guard.policy);
  message.mutable_attach()->set_allow_sass_only(client.guard.allow_sass_only);
  message.mutable_attach()->set_guard_always(client.guard.always);
  message.mutable_attach()->set_memory_quota_bytes(client.guard.memory_quota_bytes);
  if (client.guard.pinned_host_quota_bytes)
    message.mutable_attach()->set_pinned_host_quota_bytes(*client.guard.pinned_host_quota_bytes);
  if (client.guard.peer_uid) message.mutable_attach()->set_peer_uid(*client.guard.peer_uid);
  for (const std::string& operation : client.guard.adapter_operations) {
    message.mutable_attach()->add_adapter_operations(operation);
  }
  // Load order is the order of the repeated field: the worker creates instances in it.
  for (const AdmittedModuleSetting& module : client.guard.modules) {
    agileos::v1::internal::AdmittedModule* admitted = message.mutable_attach()->add_modules();
    admitted->set_name(module.name);
    admitted->set_version(module.version);
    admitted->set_ptx_path(module.ptx_path);
    admitted->set_host_library_path(module.host_library_path);
    if (module.service.empty()) continue;
    // The worker connects to the service: it gets the socket path, not the name.
    const auto socket = options_.service_sockets.find(module.service);
    if (socket == options_.service_sockets.end()) {
      return refuse(client, RefusalKind::kInternal,
                    "module '" + module.name + "' needs service '" + module.service +
                        "', which this daemon does not run");
    }
    admitted->set_service(socket->second);
    spdlog::info("client {}: module {} uses service {} at {}", client.id, module.name, module.service,
                 socket->second);
  }
  setClientState(client, ClientState::kAttaching);
  client.deadline = Clock::now() + options_.reply_timeout;
  worker.has_served = true;
  spdlog::debug("client {}: attach sent to worker {}", client.id, worker.id);
  sendToWorker(worker, message);  // on failure the worker is lost and the client refused
}

bool WorkerPool::sendToWorker(Worker& worker, const DaemonToWorker& message) {
  const wire::FrameStatus status = worker.process->send(message);
  if (status == wire::FrameStatus::kOk) return true;
  markWorkerLost(worker, std::string("control channel write failed: ") + wire::toString(status));
  return false;
}

void WorkerPool::beginRetire(Worker& worker, const std::string& reason) {
  if (worker.phase == WorkerPhase::kRetiring || worker.phase == WorkerPhase::kExiting) return;
  worker.end_reason = reason;
  spdlog::info("worker {} (pid {}): retiring ({})", worker.id, worker.process->pid(), reason);
  ++counters_.retired;
  setPhase(worker, WorkerPhase::kRetiring);
  worker.deadline = Clock::now() + options_.shutdown_grace;
  if (worker.process->controlFd() < 0) return;  // already closed: the escalation deadline does the rest
  DaemonToWorker message;
  message.mutable_shutdown();
  sendToWorker(worker, message);
}

void WorkerPool::markWorkerLost(Worker& worker, const std::string& reason) {
  if (worker.phase == WorkerPhase::kExiting) return;
  // Losing a worker that never got to serve anyone is the worker's own failure: it counts
  // towards the start backoff, so a binary that dies right after ready cannot make us spin.
  const bool failed_unused =
      worker.phase == WorkerPhase::kStarting || (worker.phase == WorkerPhase::kReady && !worker.has_served);
  worker.end_reason = reason;
  if (!worker.process->reaped()) {
    spdlog::warn("worker {} (pid {}): {}; killing it", worker.id, worker.process->pid(), reason);
    worker.process->signalGroup(SIGKILL);
    ++counters_.sigkill_sent;
  } else {
    spdlog::warn("worker {} (pid {}): {}", worker.id, worker.process->pid(), reason);
  }
  worker.process->closeControl();
  setPhase(worker, WorkerPhase::kExiting);

  const std::string what = "worker " + std::to_string(worker.id) + " " + reason;
  const std::vector<ClientId> ids(worker.clients.begin(), worker.clients.end());
  for (ClientId id : ids) {
    Client* client = findClient(id);
    if (client == nullptr) continue;
    switch (client->state) {
      case ClientState::kAwaitingWorker:
      case ClientState::kAttaching:
        refuse(*client, RefusalKind::kInternal, what);
        break;
      case ClientState::kAttached:
        spdlog::warn("client {}: session ended: {}", id, what);
        if (client->on_ended) client->on_ended(what);
        detachClient(*client);
        setClientState(*client, ClientState::kEnded);
        break;
      case ClientState::kReleaseRequested:
      case ClientState::kReleasing:
        detachClient(*client);
        clients_.erase(id);
        break;
      default:
        break;
    }
  }
  worker.clients.clear();
  if (failed_unused && !stop_begun_) noteStartFailure(what);
}

void WorkerPool::taint(Worker& worker, const std::string& reason) {
  if (worker.tainted) return;
  worker.tainted = true;
  worker.taint_reason = reason;
  ++counters_.tainted;
  notify(PoolEvent{PoolEvent::Kind::kWorkerTainted, worker.id, 0, 0, 0, reason, ""});
  spdlog::warn("worker {} (pid {}): tainted: {}; it takes no new clients and retires once idle", worker.id,
               worker.process->pid(), reason);
}

void WorkerPool::noteStartFailure(const std::string& reason) {
  ++counters_.start_failures;
  ++consecutive_start_failures_;
  auto backoff = options_.initial_backoff;
  for (std::uint32_t i = 1; i < consecutive_start_failures_ && backoff < options_.max_backoff; ++i)
    backoff *= 2;
  current_backoff_ = std::min(backoff, options_.max_backoff);
  next_start_allowed_ = Clock::now() + current_backoff_;
  last_start_failure_ = reason;
  spdlog::error("worker start failed ({} in a row): {}; next start in {}", consecutive_start_failures_,
                reason, msText(current_backoff_));
}

void WorkerPool::setPhase(Worker& worker, WorkerPhase phase) {
  if (worker.phase == phase) return;
  spdlog::info("worker {} (pid {}): {} -> {}", worker.id, worker.process->pid(), toString(worker.phase),
               toString(phase));
  worker.phase = phase;
}

}  // namespace agileos::scheduler
