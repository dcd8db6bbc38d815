#include "worker/control_channel.h"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <cerrno>

#include "proto/framing.h"
#include "worker/module_cache/compiled_module_cache.h"

namespace agileos::worker {

bool ControlChannel::send(const v1::internal::WorkerToDaemon& message) {
  std::lock_guard lock(writeMutex_);
  const wire::FrameStatus status = wire::writeFrame(fd_, message);
  if (status != wire::FrameStatus::kOk) {
    spdlog::error("control channel write failed: {}", wire::toString(status));
    return false;
  }
  return true;
}

bool ControlChannel::sendReady(const std::string& endpoint, int device, const std::string& deviceName,
                               const std::string& shmEndpoint, std::uint64_t deviceMemoryBytes) {
  v1::internal::WorkerToDaemon message;
  auto* ready = message.mutable_ready();
  ready->set_endpoint(endpoint);
  ready->set_device(device);
  ready->set_device_name(deviceName);
  ready->set_shm_endpoint(shmEndpoint);
  ready->set_device_memory_bytes(deviceMemoryBytes);
  return send(message);
}

bool ControlChannel::sendFailed(const std::string& reason) {
  v1::internal::WorkerToDaemon message;
  message.mutable_failed()->set_reason(reason);
  return send(message);
}

std::optional<std::string> ControlChannel::receiveModuleCacheKey(std::chrono::milliseconds timeout,
                                                                 std::string* error) {
  pollfd readable{fd_, POLLIN, 0};
  const int ready = ::poll(&readable, 1, static_cast<int>(timeout.count()));
  if (ready != 1) {
    *error =
        ready == 0 ? "no module cache key from the daemon in time" : "cannot wait for the module cache key";
    return std::nullopt;
  }
  v1::internal::DaemonToWorker message;
  const wire::FrameStatus status = wire::readFrame(fd_, &message);
  if (status != wire::FrameStatus::kOk) {
    *error = std::string("cannot read the module cache key: ") + wire::toString(status);
    return std::nullopt;
  }
  if (message.msg_case() != v1::internal::DaemonToWorker::kModuleCacheKey) {
    *error = "the daemon's first message is not the module cache key";
    return std::nullopt;
  }
  std::string key = message.module_cache_key().key();
  if (key.size() != CompiledModuleCache::kKeyBytes) {
    *error = "the module cache key has " + std::to_string(key.size()) + " bytes, not " +
             std::to_string(CompiledModuleCache::kKeyBytes);
    return std::nullopt;
  }
  return key;
}

void ControlChannel::contextTainted(ClientId client, const std::string& reason) {
  {
    std::lock_guard lock(taintMutex_);
    if (taintReported_) return;  // once is enough: the worker is retired after its clients leave
    taintReported_ = true;
  }
  spdlog::error("context tainted by client {}: {}", client, reason);
  v1::internal::WorkerToDaemon message;
  message.mutable_tainted()->set_client_id(client);
  message.mutable_tainted()->set_reason(reason);
  send(message);
}

void ControlChannel::sendUsage(const WorkerRuntime& runtime, std::optional<ClientId> only) {
  v1::internal::WorkerToDaemon message;
  runtime.usage(message.mutable_usage(), only);
  send(message);
}

void ControlChannel::serve(WorkerRuntime& runtime) {
  for (;;) {
    // Between messages, a usage report every interval while clients are attached. A read is
    // started only once the channel is readable, so the wait never blocks a report.
    pollfd readable{fd_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(usageInterval_.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (runtime.clientCount() != 0) sendUsage(runtime);
      continue;
    }
    v1::internal::DaemonToWorker message;
    const wire::FrameStatus status = wire::readFrame(fd_, &message);
    if (status != wire::FrameStatus::kOk) {
      spdlog::info("control channel closed ({}); shutting down", wire::toString(status));
      return;
    }
    switch (message.msg_case()) {
      case v1::internal::DaemonToWorker::kAttach: {
        const auto& attach = message.attach();
        const auto setting = parseGuardSetting(attach.guard_policy());
        if (!setting) {
          spdlog::error("refused to attach client {}: unknown guard policy", attach.client_id());
          break;  // the daemon times out waiting for `attached` and retires this worker
        }
        GuardConfig guard;
        guard.enabled = setting->first;
        guard.ptx.policy = setting->second;
        guard.allowSassOnly = attach.allow_sass_only();
        guard.always = attach.guard_always();
        std::vector<std::string> adapterOperations(attach.adapter_operations().begin(),
                                                   attach.adapter_operations().end());
        std::vector<protected_modules::AdmittedModule> protectedModules;
        protectedModules.reserve(static_cast<std::size_t>(attach.modules_size()));
        for (const auto& module : attach.modules()) {
          protectedModules.push_back({module.name(), module.version(), module.ptx_path(),
                                      module.host_library_path(), module.service()});
        }
        if (!runtime.attach(attach.client_id(), attach.session_token(), guard, std::move(adapterOperations),
                            protectedModules, attach.memory_quota_bytes(),
                            attach.has_pinned_host_quota_bytes() ? attach.pinned_host_quota_bytes()
                                                                 : kDefaultPinnedHostQuotaBytes)) {
          spdlog::error("refused to attach client {} (duplicate id or token, or a protected module failed)",
                        attach.client_id());
          break;  // the daemon times out waiting for `attached` and retires this worker
        }
        if (attach.has_peer_uid()) runtime.setPeerUid(attach.client_id(), attach.peer_uid());
        v1::internal::WorkerToDaemon reply;
        reply.mutable_attached()->set_client_id(attach.client_id());
        send(reply);
        break;
      }
      case v1::internal::DaemonToWorker::kRelease: {
        const ClientId client = message.release().client_id();
        sendUsage(runtime, client);  // its last numbers, before release() clears them
        runtime.release(client);
        v1::internal::WorkerToDaemon reply;
        reply.mutable_released()->set_client_id(client);
        send(reply);
        break;
      }
      case v1::internal::DaemonToWorker::kShutdown:
        spdlog::info("shutdown requested by the daemon");
        return;
      case v1::internal::DaemonToWorker::kModuleCacheKey:
        // Only the first message may carry it (receiveModuleCacheKey); a late one is not used.
        spdlog::warn("ignoring a module cache key after start-up");
        break;
      default:
        spdlog::warn("ignoring an empty control message");
        break;
    }
  }
}

}  // namespace agileos::worker
