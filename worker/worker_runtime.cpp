#include "worker/worker_runtime.h"

#include <spdlog/spdlog.h>

#include "worker/launch_batch.h"
#include "worker/session_teardown.h"

namespace agileos::worker {

WorkerRuntime::WorkerRuntime(GpuBackend& gpu, memmgr::MemoryManager& memory, DeviceOutputCapture* output,
                             TaintListener* taint)
    : gpu_(gpu), memory_(memory), output_(output), taint_(taint) {}

void WorkerRuntime::setAdapters(std::unique_ptr<AdapterHost> adapters) {
  adapters_ = std::move(adapters);
  dispatcher_.setAdapters(adapters_.get());
}

bool WorkerRuntime::attach(ClientId client, const std::string& sessionToken, const GuardConfig& guard,
                           std::vector<std::string> adapterOperations,
                           const std::vector<protected_modules::AdmittedModule>& protectedModules,
                           std::uint64_t memoryQuotaBytes, std::uint64_t pinnedHostQuotaBytes) {
  if (sessionToken.empty()) return false;
  auto taken = [&] { return clients_.contains(client) || byToken_.contains(sessionToken); };
  {
    std::lock_guard lock(mutex_);
    if (taken()) return false;  // checked before any plugin sees the client id
  }
  // The quota first: the modules' protected memory counts. The control channel attaches one
  // client at a time, so no other attach of this id can be in between.
  memory_.setQuota(client, memoryQuotaBytes);
  // The module instances are made without the lock (a plugin's init may take its time), before
  // the session is reachable by any call.
  std::string error;
  auto moduleSet =
      protected_modules::ModuleSet::create(client, protectedModules, pluginLibraries_, memory_, gpu_, &error);
  if (!moduleSet) {
    spdlog::error("refused to attach client {}: protected module: {}", client, error);
    memory_.setQuota(client, 0);
    return false;
  }
  auto session = std::make_shared<ClientSession>(client, sessionToken);
  session->guard.setting = guard;
  session->pinnedHostQuotaBytes = pinnedHostQuotaBytes;
  session->adapterOperations = std::move(adapterOperations);
  session->protectedModules = std::move(moduleSet);
  {
    std::lock_guard lock(mutex_);
    if (taken()) return false;  // a racing attach won; ~ClientSession tears the modules down
    clients_.emplace(client, Attached{session, std::make_shared<std::shared_mutex>()});
    byToken_.emplace(sessionToken, client);
  }
  spdlog::info(
      "client {} attached; memory quota {}; pinned host memory up to {} bytes; kernel memory guard {}{}; {} "
      "protected module instance(s)",
      client, memoryQuotaBytes == 0 ? std::string("none") : std::to_string(memoryQuotaBytes) + " bytes",
      pinnedHostQuotaBytes, policyName(guard),
      guard.enabled
          ? (guard.allowSassOnly ? " (SASS-only modules load unguarded)" : " (SASS-only modules refused)")
          : "",
      session->protectedModules->instanceCount());
  return true;
}

bool WorkerRuntime::release(ClientId client) {
  Attached attached;
  {
    std::lock_guard lock(mutex_);
    auto it = clients_.find(client);
    if (it == clients_.end()) return false;
    attached = it->second;
    byToken_.erase(attached.session->sessionToken());
    clients_.erase(it);
    peerUids_.erase(client);
  }
  attached.session->closing = true;
  std::unique_lock gate(*attached.gate);  // waits for calls in flight
  releaseSession(gpu_, memory_, *attached.session);
  spdlog::info("client {} released", client);
  return true;
}

void WorkerRuntime::setPeerUid(ClientId client, uid_t uid) {
  std::lock_guard lock(mutex_);
  if (clients_.contains(client)) peerUids_[client] = uid;
}

bool WorkerRuntime::admitsPeerUid(uid_t uid) const {
  if (uid == 0) return true;
  std::lock_guard lock(mutex_);
  for (const auto& [client, peer] : peerUids_) {
    if (peer == uid) return true;
  }
  return false;
}

void WorkerRuntime::releaseAll() {
  std::vector<ClientId> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, attached] : clients_) ids.push_back(id);
  }
  for (ClientId id : ids) release(id);
}

std::optional<WorkerRuntime::Attached> WorkerRuntime::findByToken(const std::string& token) const {
  std::lock_guard lock(mutex_);
  auto it = byToken_.find(token);
  if (it == byToken_.end()) return std::nullopt;
  return clients_.at(it->second);
}

WorkerRuntime::CallStatus WorkerRuntime::call(const std::string& sessionToken, const v1::CallRequest& request,
                                              v1::CallReply& reply, SharedMemoryChannel* shared) {
  auto attached = findByToken(sessionToken);
  if (!attached) return CallStatus::kUnauthenticated;
  return call(*attached, request, reply, shared);
}

std::optional<WorkerRuntime::Binding> WorkerRuntime::bind(const std::string& sessionToken) const {
  return findByToken(sessionToken);
}

WorkerRuntime::CallStatus WorkerRuntime::call(const Binding& attached, const v1::CallRequest& request,
                                              v1::CallReply& reply, SharedMemoryChannel* shared) {
  CallContext ctx{gpu_, memory_, *attached.session, taint_, shared, output_, &guard_, adapters_.get()};
  // Held launches (worker/launch_batch.h) go to the GPU before anything else of the connection
  // does (a launch decides in its handler), and once no call the client does not wait for is
  // queued behind them; both under the session's gate, like every call.
  const bool holding = shared != nullptr && shared->launches != nullptr;
  const bool launch = request.op_case() == v1::CallRequest::kLaunchKernel;
  auto dispatch = [&] {
    if (holding && !launch) flushHeldLaunches(ctx);
    // Only a call its client waits for is timed: a launch sent without waiting (the hot path of
    // launch-bound programs) is counted but not timed, which saves it two clock reads.
    if (shared == nullptr || shared->replyAwaited) {
      const auto started = std::chrono::steady_clock::now();
      dispatcher_.dispatch(ctx, request, reply);
      statistics_.record(request, reply, std::chrono::steady_clock::now() - started);
    } else {
      dispatcher_.dispatch(ctx, request, reply);
      statistics_.record(request, reply, std::nullopt);
    }
    attached.session->calls.fetch_add(1, std::memory_order_relaxed);
    if (holding && (!shared->unawaitedQueued || shared->launches->full())) flushHeldLaunches(ctx);
  };
  if (dispatcher_.exclusivity(request) == Exclusivity::kInvalidates) {
    std::unique_lock gate(*attached.gate);
    if (attached.session->closing) return CallStatus::kUnauthenticated;
    dispatch();
  } else {
    std::shared_lock gate(*attached.gate);
    if (attached.session->closing) return CallStatus::kUnauthenticated;
    dispatch();
  }
  // Output is collected for replies only; a call nobody awaits leaves it in the capture,
  // where the next reply's collection finds it.
  if (output_ != nullptr && (shared == nullptr || shared->replyAwaited)) {
    std::string printed = output_->take();
    if (!printed.empty()) reply.set_device_output(std::move(printed));
  }
  return CallStatus::kOk;
}

bool WorkerRuntime::isAttachedToken(const std::string& sessionToken) const {
  return findByToken(sessionToken).has_value();
}

void WorkerRuntime::usage(v1::internal::WorkerUsage* usage, std::optional<ClientId> only) const {
  std::vector<std::shared_ptr<ClientSession>> sessions;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, attached] : clients_) {
      if (!only || *only == id) sessions.push_back(attached.session);
    }
  }
  for (const auto& session : sessions) {
    v1::internal::ClientUsage* out = usage->add_clients();
    out->set_client_id(session->id());
    out->set_device_memory_bytes(memory_.chargedBytes(session->id()));
    out->set_pinned_host_bytes(session->hostSegmentBytes.load(std::memory_order_relaxed));
    out->set_calls(session->calls.load(std::memory_order_relaxed));
    out->set_guard_poisoned(session->guard.poisoned.load(std::memory_order_relaxed));
    out->set_guard_hits(session->guard.hitsSeen.load(std::memory_order_relaxed));
  }
  statistics_.report(usage);
}

std::size_t WorkerRuntime::clientCount() const {
  std::lock_guard lock(mutex_);
  return clients_.size();
}

}  // namespace agileos::worker
