// WorkerPool, client side and scheduling: the public API, the supervisor loop, deadlines,
// placement of queued clients, retirement decisions and spare replenishment.
// The process side (spawning, control messages, reaping, loss) is in worker_pool_processes.cpp.
#include "scheduler/worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>

namespace agileos::scheduler {
namespace {

using agileos::v1::internal::DaemonToWorker;

// waitpid() is polled: this often normally, and this often while a worker is known to be dying.
constexpr auto kReapPollInterval = std::chrono::milliseconds(200);
constexpr auto kDyingPollInterval = std::chrono::milliseconds(10);

std::string msText(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

const char* WorkerPool::stateName(ClientState state) {
  switch (state) {
    case ClientState::kQueued:
      return "queued";
    case ClientState::kAwaitingWorker:
      return "awaiting-worker";
    case ClientState::kAttaching:
      return "attaching";
    case ClientState::kAttached:
      return "attached";
    case ClientState::kReleaseRequested:
      return "release-requested";
    case ClientState::kReleasing:
      return "releasing";
    case ClientState::kEnded:
      return "ended";
    case ClientState::kRefused:
      return "refused";
  }
  return "unknown";
}

WorkerPool::WorkerPool(PoolOptions options, std::unique_ptr<PlacementPolicy> policy)
    : options_(std::move(options)), policy_(std::move(policy)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  if (options_.identities) {
    worker_uids_.emplace(options_.identities->uid_base, options_.identities->uid_count,
                         options_.identities->lease_dir);
  }
}

WorkerPool::~WorkerPool() {
  stop();
  ::close(wake_fd_);
}

void WorkerPool::start() {
  std::lock_guard lock(mu_);
  if (started_) return;
  started_ = true;
  ::signal(SIGPIPE, SIG_IGN);
  spdlog::info("worker pool: placement {}, prestart {}, max_workers {}, worker {}", policy_->name(),
               options_.prestart, options_.max_workers, options_.worker_executable);
  supervisor_ = std::thread(&WorkerPool::superviseLoop, this);
}

void WorkerPool::stop() {
  std::lock_guard stop_lock(stop_mu_);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (!supervisor_.joinable()) return;
  }
  wakeSupervisor();
  supervisor_.join();
  spdlog::info("worker pool stopped");
}

AcquireResult WorkerPool::acquire(ClientId client, std::string session_token, SessionEndedCallback on_ended,
                                  ClientAttachSetting guard, std::function<bool()> gone) {
  std::unique_lock lock(mu_);
  AcquireResult refused;
  if (stopping_) {
    refused.refusal = RefusalKind::kShuttingDown;
    refused.message = "the daemon is shutting down";
    return refused;
  }
  auto [it, inserted] = clients_.try_emplace(client);
  if (!inserted) {
    refused.message = "client id " + std::to_string(client) + " is already in use";
    return refused;
  }
  Client& entry = it->second;
  entry.id = client;
  entry.token = std::move(session_token);
  entry.on_ended = std::move(on_ended);
  entry.guard = std::move(guard);
  entry.queued_at = Clock::now();
  entry.deadline = entry.queued_at + queueWait();
  queue_.push_back(client);
  spdlog::debug("client {}: queued", client);
  wakeSupervisor();
  // While queued, look every kGonePoll whether the client has gone; once it is placed the
  // session's own release path takes over.
  constexpr auto kGonePoll = std::chrono::milliseconds(200);
  while (!outcome_cv_.wait_for(lock, kGonePoll, [&] { return clients_.at(client).outcome.has_value(); })) {
    Client& waiting = clients_.at(client);
    if (gone && waiting.state == ClientState::kQueued && gone()) {
      refuse(waiting, RefusalKind::kBusy, "the client left the admission queue");
    }
  }
  AcquireResult result = *clients_.at(client).outcome;
  if (!result.assigned) clients_.erase(client);
  return result;
}

void WorkerPool::release(ClientId client) {
  std::lock_guard lock(mu_);
  Client* entry = findClient(client);
  if (entry == nullptr) return;
  if (entry->state == ClientState::kAttached) {
    setClientState(*entry, ClientState::kReleaseRequested);
    spdlog::debug("client {}: release requested (worker {})", client, entry->worker);
    wakeSupervisor();
  } else if (entry->state == ClientState::kEnded) {
    clients_.erase(client);
  }
}

PoolSnapshot WorkerPool::snapshot() const {
  std::lock_guard lock(mu_);
  PoolSnapshot out;
  for (const auto& [id, worker] : workers_) {
    WorkerSnapshot w;
    w.id = id;
    w.pid = worker.process->pid();
    w.phase = worker.phase;
    w.endpoint = worker.endpoint;
    w.clients.assign(worker.clients.begin(), worker.clients.end());
    w.has_served = worker.has_served;
    w.tainted = worker.tainted;
    w.taint_reason = worker.taint_reason;
    w.draining = worker.draining;
    w.drain_reason = worker.drain_reason;
    w.uid = worker.uid;
    w.calls = worker.calls;
    w.device = worker.device;
    out.calls.add(worker.calls);
    out.workers.push_back(std::move(w));
  }
  out.calls.add(reaped_calls_);
  const auto now = Clock::now();
  for (const auto& [id, client] : clients_) {
    if (client.state == ClientState::kRefused) continue;
    ClientSnapshot c;
    c.id = id;
    c.state = stateName(client.state);
    c.worker = client.worker;
    if (const auto w = workers_.find(client.worker); w != workers_.end()) c.device = w->second.device;
    c.memory_quota_bytes = client.guard.memory_quota_bytes;
    c.peer_uid = client.guard.peer_uid;
    if (client.state == ClientState::kQueued) {
      c.waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - client.queued_at);
      ++out.queued;
    }
    if (client.state == ClientState::kAttached) ++out.attached;
    c.usage = client.usage;
    out.client_list.push_back(std::move(c));
  }
  out.devices = options_.devices;
  out.clients = clients_.size();
  out.counters = counters_;
  out.consecutive_start_failures = consecutive_start_failures_;
  out.current_backoff = current_backoff_;
  out.last_start_failure = last_start_failure_;
  return out;
}

void WorkerPool::superviseLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    if (stopping_ && !stop_begun_) beginStop();
    reapExited();
    enforceDeadlines();
    sendPendingReleases();
    if (!stop_begun_) schedulePendingClients();
    retireIdleWorkers();
    if (!stop_begun_) replenishSpares();
    if (stop_begun_ && workers_.empty()) break;

    std::vector<pollfd> fds = {{wake_fd_, POLLIN, 0}};
    std::vector<WorkerId> fd_owner = {0};
    for (const auto& [id, worker] : workers_) {
      if (worker.process->controlFd() < 0) continue;
      fds.push_back({worker.process->controlFd(), POLLIN, 0});
      fd_owner.push_back(id);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(nextWakeup());
    lock.unlock();
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    lock.lock();
    if (ready <= 0) continue;
    if (fds[0].revents != 0) {
      std::uint64_t count;
      while (::read(wake_fd_, &count, sizeof count) > 0) {
      }
    }
    // Workers are removed and spawned only on this thread (in reapExited() and the scheduling
    // steps, not while messages are handled), but a message handled earlier in this pass may
    // have closed a worker's channel: look each one up again and compare descriptors.
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Worker* worker = findWorker(fd_owner[i]);
      if (worker != nullptr && worker->process->controlFd() == fds[i].fd) readControlMessage(*worker);
    }
  }
}

void WorkerPool::beginStop() {
  stop_begun_ = true;
  spdlog::info("worker pool: stopping; ending {} client(s), retiring {} worker(s)", clients_.size(),
               workers_.size());
  std::vector<ClientId> ids;
  for (const auto& [id, client] : clients_) ids.push_back(id);
  for (ClientId id : ids) {
    Client& client = clients_.at(id);
    switch (client.state) {
      case ClientState::kQueued:
      case ClientState::kAwaitingWorker:
      case ClientState::kAttaching:
        refuse(client, RefusalKind::kShuttingDown, "the daemon is shutting down");
        break;
      case ClientState::kAttached:
        if (client.on_ended) client.on_ended("daemon shutting down");
        detachClient(client);
        setClientState(client, ClientState::kEnded);
        break;
      case ClientState::kReleaseRequested:
      case ClientState::kReleasing:
        detachClient(client);
        clients_.erase(id);
        break;
      case ClientState::kEnded:
      case ClientState::kRefused:
        break;
    }
  }
  queue_.clear();
  for (auto& [id, worker] : workers_) beginRetire(worker, "daemon stopping");
}

void WorkerPool::enforceDeadlines() {
  const auto now = Clock::now();
  std::vector<WorkerId> worker_ids;
  for (const auto& [id, worker] : workers_) worker_ids.push_back(id);
  for (WorkerId id : worker_ids) {
    Worker* worker = findWorker(id);
    if (worker == nullptr) continue;
    if (worker->exit_deadline && now >= *worker->exit_deadline && worker->phase != WorkerPhase::kExiting) {
      markWorkerLost(*worker, "closed its control channel but did not exit");
    } else if (worker->phase == WorkerPhase::kStarting && now >= worker->deadline) {
      markWorkerLost(*worker, "did not become ready within " + msText(options_.start_timeout));
    } else if (worker->phase == WorkerPhase::kRetiring && now >= worker->deadline) {
      if (!worker->sigterm_sent) {
        spdlog::warn("worker {} (pid {}): did not exit within {} of shutdown; sending SIGTERM", id,
                     worker->process->pid(), msText(options_.shutdown_grace));
        worker->process->signalGroup(SIGTERM);
        worker->sigterm_sent = true;
        ++counters_.sigterm_sent;
        worker->deadline = now + options_.terminate_grace;
      } else {
        markWorkerLost(*worker, "did not exit within " + msText(options_.terminate_grace) + " of SIGTERM");
      }
    }
  }

  std::vector<ClientId> client_ids;
  for (const auto& [id, client] : clients_) client_ids.push_back(id);
  for (ClientId id : client_ids) {
    Client* client = findClient(id);
    if (client == nullptr || now < client->deadline) continue;
    Worker* worker = findWorker(client->worker);
    switch (client->state) {
      case ClientState::kQueued:
        // Where every worker slot is held, the slot is the reason, whatever else is short: a
        // pinned host share of total / max_workers runs out exactly when the slots do.
        if (std::string shortfall = pinnedHostShortfall(*client); !shortfall.empty() && !everySlotHeld()) {
          refuse(*client, RefusalKind::kBusy,
                 "no pinned host memory became free within " + msText(queueWait()) + ": " + shortfall +
                     " (worker.queue_wait_ms); try again later");
          break;
        }
        if (const DeviceChoice choice = chooseDeviceFor(*client); !choice.device && !everySlotHeld()) {
          refuse(*client, RefusalKind::kBusy,
                 "no device memory became free within " + msText(queueWait()) + ": " + choice.shortfall +
                     " (worker.queue_wait_ms); try again later");
          break;
        }
        refuse(*client, RefusalKind::kBusy,
               "no worker slot became free within " + msText(queueWait()) + " (worker.max_workers " +
                   std::to_string(options_.max_workers) + ", worker.queue_wait_ms); try again later");
        break;
      case ClientState::kAttaching:
        if (worker != nullptr) {
          markWorkerLost(*worker, "did not acknowledge the attach of client " + std::to_string(id) +
                                      " within " + msText(options_.reply_timeout));
        }
        break;
      case ClientState::kReleasing:
        if (worker != nullptr) {
          taint(*worker, "did not acknowledge the release of client " + std::to_string(id) + " within " +
                             msText(options_.reply_timeout));
        }
        detachClient(*client);
        clients_.erase(id);
        break;
      default:
        break;  // no deadline in the other states
    }
  }
}

void WorkerPool::sendPendingReleases() {
  std::vector<ClientId> ids;
  for (const auto& [id, client] : clients_) {
    if (client.state == ClientState::kReleaseRequested) ids.push_back(id);
  }
  for (ClientId id : ids) {
    Client* client = findClient(id);
    if (client == nullptr || client->state != ClientState::kReleaseRequested) continue;
    Worker* worker = findWorker(client->worker);
    if (worker == nullptr) {  // cannot happen: a lost worker detaches its clients
      clients_.erase(id);
      continue;
    }
    // The leaving client's uid loses its endpoints first: it cannot reconnect meanwhile.
    if (client->guard.peer_uid) {
      if (std::string problem = giveEndpoints(*worker, worker->runsAs()); !problem.empty()) {
        // Lost: it is killed and the client detached, so the uid reaches nothing of it any more.
        markWorkerLost(*worker,
                       "cannot take its endpoints back from client " + std::to_string(id) + ": " + problem);
        continue;
      }
    }
    setClientState(*client, ClientState::kReleasing);
    client->deadline = Clock::now() + options_.reply_timeout;
    spdlog::info("client {}: session over; releasing it from worker {} (pid {})", id, worker->id,
                 worker->process->pid());
    DaemonToWorker message;
    message.mutable_release()->set_client_id(id);
    sendToWorker(*worker, message);  // on failure the worker is lost and the entry dropped
  }
}

void WorkerPool::schedulePendingClients() {
  while (!queue_.empty()) {
    const ClientId id = queue_.front();
    queue_.pop_front();
    Client* client = findClient(id);
    if (client == nullptr || client->state != ClientState::kQueued) continue;
    // Capacity first, in line: a client whose quota (or pinned host share) fits no device waits,
    // and everyone behind it with it (first come, first served: a smaller quota does not overtake).
    std::string shortfall = pinnedHostShortfall(*client);
    // A pinned share larger than the host's total never fits ("its ..."); DeviceChoice says
    // whether a device ever can.
    bool never = shortfall.rfind("its ", 0) == 0;
    const DeviceChoice choice = shortfall.empty() ? chooseDeviceFor(*client) : DeviceChoice{};
    if (shortfall.empty() && !choice.device) {
      shortfall = choice.shortfall;
      never = choice.never;
    }
    if (!shortfall.empty()) {
      // No use waiting for what can never fit.
      if (options_.queue_wait.count() == 0 || never) {
        refuse(*client, RefusalKind::kBusy, shortfall);
        continue;
      }
      if (shortfall != capacity_wait_reason_) spdlog::info("client {}: waits: {}", id, shortfall);
      capacity_wait_reason_ = std::move(shortfall);
      queue_.push_front(id);
      return;
    }
    capacity_wait_reason_.clear();
    const int device = *choice.device;
    const PlacementDecision decision = policy_->place(summary(device));
    switch (decision.kind) {
      case PlacementDecision::Kind::kUseWorker: {
        Worker* worker = findWorker(decision.worker);
        if (worker == nullptr) {
          refuse(*client, RefusalKind::kInternal, "placement chose an unknown worker");
          break;
        }
        placeOnWorker(*worker, *client);
        break;
      }
      case PlacementDecision::Kind::kStartWorker: {
        std::string error;
        Worker* worker = spawnWorker(device, &error);
        if (worker == nullptr) {
          noteStartFailure(error);
          refuse(*client, RefusalKind::kInternal, "cannot start a worker: " + error);
          break;
        }
        placeOnWorker(*worker, *client);
        break;
      }
      case PlacementDecision::Kind::kWait:
        queue_.push_front(id);  // first in line still; later clients wait behind it
        return;
      case PlacementDecision::Kind::kRefuse:
        // Every slot is held: the admission queue keeps the client, first in line, until a
        // slot frees or its deadline (enforceDeadlines) refuses it with the reason.
        if (decision.refusal == RefusalKind::kBusy && options_.queue_wait.count() > 0) {
          queue_.push_front(id);
          return;
        }
        refuse(*client, decision.refusal, decision.message);
        break;
    }
  }
}

bool WorkerPool::everySlotHeld() const {
  for (int device : options_.devices) {
    const PlacementDecision decision = policy_->place(summary(device));
    const bool held =
        decision.kind == PlacementDecision::Kind::kWait ||
        (decision.kind == PlacementDecision::Kind::kRefuse && decision.refusal == RefusalKind::kBusy);
    if (!held) return false;
  }
  return true;
}

std::chrono::milliseconds WorkerPool::queueWait() const {
  // queue_wait 0 refuses a busy client at once (schedulePendingClients); a client that only
  // waits for a retiring worker's slot (PlacementDecision::kWait) then still gets start_timeout.
  return options_.queue_wait.count() > 0 ? options_.queue_wait : options_.start_timeout;
}

bool WorkerPool::holdsCapacity(ClientState state) {
  switch (state) {
    case ClientState::kAwaitingWorker:
    case ClientState::kAttaching:
    case ClientState::kAttached:
    case ClientState::kReleaseRequested:
    case ClientState::kReleasing:  // its share is not back until the worker says released
      return true;
    default:
      return false;
  }
}

std::uint64_t WorkerPool::promisedToPlacedClients(
    const std::function<std::uint64_t(const ClientAttachSetting&)>& amountOf) const {
  std::uint64_t promised = 0;
  for (const auto& [id, other] : clients_) {
    if (holdsCapacity(other.state)) promised += amountOf(other.guard);
  }
  return promised;
}

std::vector<DeviceLoad> WorkerPool::deviceLoads() const {
  std::vector<DeviceLoad> loads;
  for (int device : options_.devices) {
    DeviceLoad load;
    load.device = device;
    if (auto it = device_memory_bytes_.find(device); it != device_memory_bytes_.end())
      load.memory_bytes = it->second;
    loads.push_back(load);
  }
  // Quotas count from placement until the worker says released (holdsCapacity); a client being
  // released no longer counts as active.
  for (const auto& [id, client] : clients_) {
    auto worker = workers_.find(client.worker);
    if (worker == workers_.end() || !holdsCapacity(client.state)) continue;
    for (DeviceLoad& load : loads) {
      if (load.device != worker->second.device) continue;
      load.promised_bytes += client.guard.memory_quota_bytes;
      if (client.state != ClientState::kReleaseRequested && client.state != ClientState::kReleasing)
        ++load.active_clients;
    }
  }
  return loads;
}

DeviceChoice WorkerPool::chooseDeviceFor(const Client& client) const {
  return chooseDevice(deviceLoads(), client.guard.device, client.guard.memory_quota_bytes,
                      options_.memory_reserve_bytes);
}

// Whether every client's pinned host share, this one's included, fits the host-wide total.
std::string WorkerPool::pinnedHostShortfall(const Client& client) const {
  const std::uint64_t share = client.guard.pinned_host_quota_bytes.value_or(0);
  const std::uint64_t total = options_.pinned_host_total_bytes;
  if (share == 0 || total == 0) return {};
  if (share > total) {
    return "its pinned host memory share (" + std::to_string(share) +
           " bytes) exceeds memory.pinned_total_bytes (" + std::to_string(total) + ")";
  }
  const std::uint64_t promised = promisedToPlacedClients(
      [](const ClientAttachSetting& setting) { return setting.pinned_host_quota_bytes.value_or(0); });
  if (promised <= total && share <= total - promised) return {};
  return "the host's pinned memory is promised to other clients (" + std::to_string(promised) + " of " +
         std::to_string(total) + " bytes, memory.pinned_total_bytes; this client's share is " +
         std::to_string(share) + ")";
}

void WorkerPool::retireIdleWorkers() {
  std::vector<WorkerId> ids;
  for (const auto& [id, worker] : workers_) {
    if (worker.phase != WorkerPhase::kReady || !worker.clients.empty()) continue;
    if (worker.tainted || worker.draining || policy_->retireWhenIdle(summarize(worker))) ids.push_back(id);
  }
  for (WorkerId id : ids) {
    Worker& worker = workers_.at(id);
    beginRetire(worker, worker.tainted    ? "tainted"
                        : worker.draining ? "drained: " + worker.drain_reason
                                          : "its client was released");
  }
}

std::size_t WorkerPool::sparesOf(int device) const {
  std::size_t spares = 0;
  for (const auto& [id, worker] : workers_) {
    if (worker.device == device && policy_->isSpare(summarize(worker))) ++spares;
  }
  return spares;
}

void WorkerPool::replenishSpares() {
  if (Clock::now() < next_start_allowed_) return;
  // `prestart` spares for each device, in the configured order, within max_workers in all.
  for (int device : options_.devices) {
    for (std::size_t spares = sparesOf(device);
         spares < options_.prestart && workers_.size() < options_.max_workers; ++spares) {
      std::string error;
      if (spawnWorker(device, &error) == nullptr) return noteStartFailure(error);
    }
  }
}

WorkerPool::Clock::duration WorkerPool::nextWakeup() const {
  const auto now = Clock::now();
  auto next = now + kReapPollInterval;
  for (const auto& [id, worker] : workers_) {
    if (worker.phase == WorkerPhase::kExiting || worker.exit_deadline)
      next = std::min(next, now + kDyingPollInterval);
    if (worker.phase == WorkerPhase::kStarting || worker.phase == WorkerPhase::kRetiring) {
      next = std::min(next, worker.deadline);
    }
  }
  for (const auto& [id, client] : clients_) {
    if (client.state == ClientState::kQueued || client.state == ClientState::kAttaching ||
        client.state == ClientState::kReleasing) {
      next = std::min(next, client.deadline);
    }
  }
  // Only a future backoff expiry is a wake-up reason; a past one with no spawn means the cap is reached.
  const bool short_of_spares = std::any_of(options_.devices.begin(), options_.devices.end(),
                                           [&](int device) { return sparesOf(device) < options_.prestart; });
  if (!stop_begun_ && short_of_spares && next_start_allowed_ > now) {
    next = std::min(next, next_start_allowed_);
  }
  return std::max(next - now, Clock::duration::zero());
}

void WorkerPool::placeOnWorker(Worker& worker, Client& client) {
  client.worker = worker.id;
  setClientState(client, ClientState::kAwaitingWorker);
  worker.clients.insert(client.id);
  spdlog::info("client {}: placed on worker {} (pid {}, {})", client.id, worker.id, worker.process->pid(),
               toString(worker.phase));
  // A starting worker's own start deadline bounds the wait; the client is refused if it fails.
  if (worker.phase == WorkerPhase::kReady) sendAttach(worker, client);
}

void WorkerPool::refuse(Client& client, RefusalKind kind, const std::string& message) {
  detachClient(client);
  std::erase(queue_, client.id);
  setClientState(client, ClientState::kRefused);
  client.outcome = AcquireResult{false, 0, "", kind, message};
  outcome_cv_.notify_all();
  spdlog::info("client {}: refused: {}", client.id, message);
}

void WorkerPool::detachClient(Client& client) {
  if (Worker* worker = findWorker(client.worker); worker != nullptr) worker->clients.erase(client.id);
  client.worker = 0;
}

void WorkerPool::setClientState(Client& client, ClientState state) {
  if (client.state == state) return;
  spdlog::debug("client {}: {} -> {} (worker {})", client.id, stateName(client.state), stateName(state),
                client.worker);
  client.state = state;
}

WorkerSummary WorkerPool::summarize(const Worker& worker) const {
  WorkerSummary out;
  out.id = worker.id;
  out.phase = worker.phase;
  out.has_served = worker.has_served;
  out.tainted = worker.tainted;
  out.draining = worker.draining;
  for (ClientId id : worker.clients) {
    auto it = clients_.find(id);
    if (it == clients_.end()) continue;
    const ClientState state = it->second.state;
    if (state != ClientState::kReleaseRequested && state != ClientState::kReleasing) ++out.active_clients;
  }
  return out;
}

PoolSummary WorkerPool::summary(int device) const {
  PoolSummary out;
  std::size_t others = 0;
  for (const auto& [id, worker] : workers_) {
    if (worker.device == device) {
      out.workers.push_back(summarize(worker));
    } else {
      ++others;
    }
  }
  // The slots are shared: another device's workers hold theirs (max_workers >= workers_.size()).
  out.max_workers = options_.max_workers > others ? options_.max_workers - others : 0;
  out.start_backoff_active = Clock::now() < next_start_allowed_;
  out.last_start_failure = last_start_failure_;
  return out;
}

WorkerPool::Client* WorkerPool::findClient(ClientId id) {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : &it->second;
}

WorkerPool::Worker* WorkerPool::findWorker(WorkerId id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

bool WorkerPool::drain(WorkerId id, const std::string& reason, std::string* error) {
  std::lock_guard lock(mu_);
  Worker* worker = findWorker(id);
  if (worker == nullptr) {
    *error = "no worker " + std::to_string(id);
    return false;
  }
  if (worker->phase == WorkerPhase::kRetiring || worker->phase == WorkerPhase::kExiting) {
    *error = "worker " + std::to_string(id) + " is already going away (" + toString(worker->phase) + ")";
    return false;
  }
  if (!worker->draining) {
    worker->draining = true;
    worker->drain_reason = reason;
    ++counters_.drained;
    spdlog::warn("worker {} (pid {}): drained ({}); it takes no new clients and retires once idle", id,
                 worker->process->pid(), reason);
    notify(PoolEvent{PoolEvent::Kind::kWorkerDrained, id, 0, 0, 0, reason, ""});
  }
  wakeSupervisor();
  return true;
}

void WorkerPool::notify(const PoolEvent& event) const {
  if (options_.on_event) options_.on_event(event);
}

void WorkerPool::wakeSupervisor() {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

}  // namespace agileos::scheduler
