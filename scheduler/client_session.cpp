#include "scheduler/client_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "modules/catalog/module_admission.h"
#include "scheduler/audit_log.h"
#include "scheduler/printable_line.h"
#include "scheduler/session_registry.h"
#include "scheduler/session_token.h"

namespace agileos::scheduler {
namespace {

using agileos::v1::Refusal;
using agileos::v1::SessionDown;
using agileos::v1::SessionUp;

// Hello.program is untrusted text; it only ever reaches the log, one printable line.
std::string loggable(const std::string& text) { return printableLine(text, 128); }

Refusal::Reason toProto(RefusalKind kind) {
  switch (kind) {
    case RefusalKind::kBusy:
      return Refusal::BUSY;
    case RefusalKind::kInternal:
      return Refusal::INTERNAL;
    case RefusalKind::kShuttingDown:
      return Refusal::INTERNAL;
  }
  return Refusal::INTERNAL;
}

bool writeRefusal(SessionStream& stream, Refusal::Reason reason, const std::string& message) {
  SessionDown down;
  down.mutable_refusal()->set_reason(reason);
  down.mutable_refusal()->set_message(message);
  return stream.write(down);
}

// Which of the two ways a session can end came first, and why.
class SessionEndSignal {
 public:
  // From the pool's SessionEndedCallback (supervisor thread, pool lock held): record and wake only.
  void workerEnded(const std::string& reason) {
    std::lock_guard lock(mu_);
    if (!worker_end_reason_) worker_end_reason_ = reason;
    cv_.notify_all();
  }

  void streamEnded() {
    std::lock_guard lock(mu_);
    stream_ended_ = true;
    cv_.notify_all();
  }

  // Blocks until one of the two happens. The worker's end reason if that came while the stream
  // was still open; nullopt if the stream ended.
  std::optional<std::string> waitForWorkerEnd() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stream_ended_ || worker_end_reason_.has_value(); });
    if (stream_ended_) return std::nullopt;
    return worker_end_reason_;
  }

  bool waitForStreamEnd(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return stream_ended_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stream_ended_ = false;
  std::optional<std::string> worker_end_reason_;
};

// Admits the Hello's module requests against the daemon's pool and policy. On success
// *modules holds the admitted modules in load order; else *error says why. The error text
// quotes client input only through quoteText (bounded, printable), so it may be logged and
// sent back as is.
bool admitHelloModules(const ModulesSection& section, const agileos::v1::Hello& hello,
                       std::vector<AdmittedModuleSetting>* modules, std::string* error) {
  // Checked before anything is copied. Each name and requirement is bounded by the Hello's own
  // size limit (gRPC's receive limit) and then by admitModules, which checks lengths first.
  const auto count = static_cast<std::size_t>(hello.modules_size());
  if (count > agileos::modules::kMaxModuleRequests) {
    *error = "too many module requests (" + std::to_string(count) + "); at most " +
             std::to_string(agileos::modules::kMaxModuleRequests);
    return false;
  }
  std::vector<agileos::modules::ModuleRequest> requests;
  requests.reserve(count);
  for (const agileos::v1::ModuleRequest& request : hello.modules()) {
    requests.push_back({request.name(), request.version()});
  }
  agileos::modules::AdmissionResult admitted =
      agileos::modules::admitModules(section.pool, section.allowed, requests);
  if (!admitted.admitted()) {
    *error = std::move(admitted.error);
    return false;
  }
  modules->clear();
  for (const agileos::modules::ModuleEntry& entry : admitted.load_order) {
    modules->push_back(
        {entry.name, entry.version.toString(), entry.ptx_path, entry.host_library_path, entry.service});
  }
  return true;
}

// For the first admitted module whose service cannot serve a new client: "module 'files' cannot be
// served: service 'storage' is down (failed; last: ...)"; else "".
std::string unavailableService(const SessionOptions& options,
                               const std::vector<AdmittedModuleSetting>& modules) {
  if (!options.service_unavailable) return "";
  for (const AdmittedModuleSetting& module : modules) {
    if (module.service.empty()) continue;
    if (std::string why = options.service_unavailable(module.service); !why.empty()) {
      return "module '" + module.name + "' cannot be served: " + why;
    }
  }
  return "";
}

// "queue 1.0.0, kvstore 1.2.0" (pool names: trusted, bounded), or "none".
std::string describeModules(const std::vector<AdmittedModuleSetting>& modules) {
  if (modules.empty()) return "none";
  std::string out;
  for (const AdmittedModuleSetting& module : modules) {
    out += (out.empty() ? "" : ", ") + module.name + " " + module.version;
  }
  return out;
}

// Reads the first message, cancelling the stream if none arrives within `timeout`.
bool readHello(SessionStream& stream, SessionUp* up, std::chrono::milliseconds timeout) {
  std::mutex mutex;
  std::condition_variable arrived;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mutex);
    if (!arrived.wait_for(lock, timeout, [&] { return done; })) {
      spdlog::info("session from {}: no Hello within {} ms; cancelled", stream.peer(), timeout.count());
      stream.cancel();
    }
  });
  const bool ok = stream.read(up);
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  arrived.notify_all();
  watchdog.join();
  return ok;
}

// The kernel's identity of the peer, for the audit trail.
nlohmann::json peerIdentity(const std::optional<PeerCredentials>& peer) {
  if (!peer) return {{"credentials", "unknown"}};
  return {{"uid", peer->uid}, {"gid", peer->gid}, {"pid", peer->pid}};
}

}  // namespace

void SessionRunner::auditRefusal(SessionStream& stream, const std::optional<PeerCredentials>& peer,
                                 const std::string& program, Refusal::Reason code,
                                 const std::string& reason) {
  if (options_.registry) options_.registry->countRefusal(Refusal::Reason_Name(code));
  if (!options_.audit) return;
  nlohmann::json event = {{"event", "session_refused"},
                          {"peer", stream.peer()},
                          {"reason", reason},
                          {"refusal", Refusal::Reason_Name(code)}};
  event.update(peerIdentity(peer));
  if (!program.empty()) event["program"] = program;
  options_.audit->record(std::move(event));
}

void SessionRunner::refuse(SessionStream& stream, const std::optional<PeerCredentials>& peer,
                           const std::string& program, Refusal::Reason code, const std::string& reason) {
  spdlog::info("session from {}: refused: {}", stream.peer(), reason);
  auditRefusal(stream, peer, program, code, reason);
  writeRefusal(stream, code, reason);
}

void SessionRunner::run(SessionStream& stream) {
  SessionUp up;
  if (!readHello(stream, &up, options_.hello_timeout)) {
    spdlog::debug("session from {}: ended before Hello", stream.peer());
    return;
  }
  // Who the client is, as the kernel says (not its Hello): its uid bounds its places, goes to the
  // worker, which lets only that uid reach its endpoints, and to the audit trail.
  const std::optional<PeerCredentials> peer = stream.credentials();
  if (!up.has_hello()) {
    refuse(stream, peer, "", Refusal::BAD_REQUEST, "the first message of a Session must be Hello");
    return;
  }
  const agileos::v1::Hello& hello = up.hello();
  const std::string program = loggable(hello.program());
  if (hello.protocol_version() != agileos::v1::PROTOCOL_VERSION_CURRENT) {
    const std::string message = "client speaks protocol version " + std::to_string(hello.protocol_version()) +
                                "; this daemon speaks version " +
                                std::to_string(agileos::v1::PROTOCOL_VERSION_CURRENT);
    refuse(stream, peer, program, Refusal::VERSION_MISMATCH, message);
    return;
  }

  std::string guardPolicy, guardError;
  if (!admitGuardPolicy(options_.guard, hello.guard_policy(), &guardPolicy, &guardError)) {
    refuse(stream, peer, program, Refusal::BAD_REQUEST, guardError);
    return;
  }
  std::vector<AdmittedModuleSetting> modules;
  if (std::string modulesError; !admitHelloModules(*this->modules(), hello, &modules, &modulesError)) {
    refuse(stream, peer, program, Refusal::BAD_REQUEST, "module admission: " + modulesError);
    return;
  }
  if (std::string down = unavailableService(options_, modules); !down.empty()) {
    refuse(stream, peer, program, Refusal::UNAVAILABLE, down);
    return;
  }

  std::optional<int> device;
  if (hello.has_device()) {
    device = hello.device();
    if (!options_.devices.empty() &&
        std::find(options_.devices.begin(), options_.devices.end(), *device) == options_.devices.end()) {
      std::string served;
      for (int d : options_.devices) served += (served.empty() ? "" : ", ") + std::to_string(d);
      refuse(stream, peer, program, Refusal::BAD_REQUEST,
             "device " + std::to_string(*device) + " is not served here (worker.devices: " + served + ")");
      return;
    }
  }

  if (peer && options_.max_clients_per_uid != 0 && !takeUidPlace(peer->uid)) {
    const std::string message = "uid " + std::to_string(peer->uid) + " already holds " +
                                std::to_string(options_.max_clients_per_uid) +
                                " sessions (worker.max_clients_per_uid); try again later";
    refuse(stream, peer, program, Refusal::BUSY, message);
    return;
  }
  // Gives the place back however run() returns.
  struct UidPlace {
    SessionRunner* runner;
    bool held;
    uid_t uid;
    ~UidPlace() {
      if (held) runner->giveUidPlace(uid);
    }
  } place{this, peer.has_value() && options_.max_clients_per_uid != 0, peer ? peer->uid : 0};

  const ClientId client = next_client_id_.fetch_add(1);
  std::optional<std::string> token = mintSessionToken();
  if (!token) {
    spdlog::error("client {}: cannot read random bytes for a session token", client);
    writeRefusal(stream, Refusal::INTERNAL, "the daemon cannot mint a session token");
    return;
  }
  const std::uint64_t memoryQuota = admitMemoryQuota(
      options_.memory, hello.memory_quota_bytes(),
      peer ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(peer->uid)) : std::nullopt);
  spdlog::info(
      "client {}: hello from {} ({}; program '{}', claims pid {}); kernel memory guard {}; modules {}; "
      "memory "
      "quota {}",
      client, stream.peer(),
      peer ? "uid " + std::to_string(peer->uid) + " gid " + std::to_string(peer->gid) + " pid " +
                 std::to_string(peer->pid)
           : std::string("credentials unknown"),
      program, hello.pid(), guardPolicy, describeModules(modules),
      memoryQuota == 0 ? std::string("none") : std::to_string(memoryQuota) + " bytes");

  SessionEndSignal end_signal;
  std::vector<std::string> admittedNames;  // "name version", for the audit trail and the registry
  for (const AdmittedModuleSetting& module : modules)
    admittedNames.push_back(module.name + " " + module.version);
  const auto placementStarted = std::chrono::steady_clock::now();
  const AcquireResult placed = pool_.acquire(
      client, *token, [&end_signal](const std::string& reason) { end_signal.workerEnded(reason); },
      ClientAttachSetting{
          guardPolicy, options_.guard.sass_only == "allow", options_.guard.require == "always",
          admittedAdapterOperations(options_.adapters), std::move(modules), memoryQuota, device,
          peer ? std::optional<uid_t>(peer->uid) : std::nullopt, options_.pinned_host_quota_bytes},
      [&stream] { return stream.gone(); });
  if (options_.registry)
    options_.registry->countPlacementWait(std::chrono::steady_clock::now() - placementStarted);
  if (!placed.assigned) {
    // The pool logged why; the trail and the client get it here.
    auditRefusal(stream, peer, program, toProto(placed.refusal), placed.message);
    writeRefusal(stream, toProto(placed.refusal), placed.message);
    return;
  }

  SessionDown down;
  agileos::v1::Assignment* assignment = down.mutable_assignment();
  assignment->set_protocol_version(agileos::v1::PROTOCOL_VERSION_CURRENT);
  assignment->set_worker_endpoint(placed.endpoint);
  assignment->set_session_token(*token);
  assignment->set_client_id(client);
  assignment->set_shm_endpoint(placed.shm_endpoint);
  if (!stream.write(down)) {
    spdlog::info("client {}: gone before its assignment could be sent", client);
    pool_.release(client);
    return;
  }
  spdlog::info("client {}: assigned worker {} at {}", client, placed.worker, placed.endpoint);
  if (options_.audit) {
    nlohmann::json event = {{"event", "session_start"},
                            {"client", client},
                            {"peer", stream.peer()},
                            {"program", program},
                            {"claimed_pid", hello.pid()},
                            {"guard_policy", guardPolicy},
                            {"memory_quota_bytes", memoryQuota},
                            {"worker", placed.worker}};
    event.update(peerIdentity(peer));
    nlohmann::json moduleNames = nlohmann::json::array();
    for (const agileos::v1::ModuleRequest& request : hello.modules())
      moduleNames.push_back(loggable(request.name()));
    event["modules"] = std::move(moduleNames);
    event["admitted_modules"] = admittedNames;
    options_.audit->record(std::move(event));
  }

  // From here until the stream has ended, an administrator may end the session (the registry's
  // `end` only records and wakes, like the pool's callback).
  if (options_.registry) {
    options_.registry->add(
        SessionInfo{client, peer, program, guardPolicy, memoryQuota, std::move(admittedNames), placed.worker,
                    std::chrono::system_clock::now()},
        [&end_signal](const std::string& reason) { end_signal.workerEnded(reason); });
  }
  // The watcher tells the client when its worker goes away (or an administrator ends the
  // session); this thread waits for the client.
  std::thread watcher([&] {
    const std::optional<std::string> reason = end_signal.waitForWorkerEnd();
    if (!reason) return;
    SessionDown ended;
    ended.mutable_ended()->set_reason(*reason);
    stream.write(ended);
    if (!end_signal.waitForStreamEnd(options_.end_grace)) {
      spdlog::info("client {}: did not close its session within {} ms of SessionEnded; cancelling", client,
                   options_.end_grace.count());
      stream.cancel();
    }
  });
  while (stream.read(&up)) {
    spdlog::warn("client {}: sent a message after Hello; ending its session", client);
    stream.cancel();
  }
  if (options_.registry) options_.registry->remove(client);  // before end_signal goes out of scope
  end_signal.streamEnded();
  watcher.join();
  pool_.release(client);
  spdlog::info("client {}: session closed", client);
  if (options_.audit) {
    nlohmann::json event = {{"event", "session_end"}, {"client", client}};
    event.update(peerIdentity(peer));
    options_.audit->record(std::move(event));
  }
}

std::shared_ptr<const ModulesSection> SessionRunner::modules() const {
  std::lock_guard lock(modules_mu_);
  return modules_;
}

void SessionRunner::setModules(ModulesSection modules) {
  auto replacement = std::make_shared<const ModulesSection>(std::move(modules));
  std::lock_guard lock(modules_mu_);
  modules_ = std::move(replacement);
}

bool SessionRunner::takeUidPlace(uid_t uid) {
  std::lock_guard lock(uid_places_mu_);
  std::uint32_t& held = uid_places_[uid];
  if (held >= options_.max_clients_per_uid) {
    if (held == 0) uid_places_.erase(uid);
    return false;
  }
  ++held;
  return true;
}

void SessionRunner::giveUidPlace(uid_t uid) {
  std::lock_guard lock(uid_places_mu_);
  auto it = uid_places_.find(uid);
  if (it != uid_places_.end() && --it->second == 0) uid_places_.erase(it);
}

}  // namespace agileos::scheduler
