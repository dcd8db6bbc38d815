// ControlChannel: the worker's end of the daemon <-> worker socketpair
// (proto/agileos/v1/worker_control.proto, framed by proto/framing.h).
//
// serve() runs on the worker's main thread: it answers attach/release, and
// returns on shutdown or when the daemon's end closes (the worker must not
// outlive its daemon); between messages it reports usage (WorkerUsage) every second while
// clients are attached, and a client's last usage just before acknowledging its release.
// Notifications (taint) may be sent from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "agileos/v1/worker_control.pb.h"
#include "worker/worker_runtime.h"

namespace agileos::worker {

class ControlChannel final : public TaintListener {
 public:
  explicit ControlChannel(int fd) : fd_(fd) {}

  bool sendReady(const std::string& endpoint, int device, const std::string& deviceName,
                 const std::string& shmEndpoint = "", std::uint64_t deviceMemoryBytes = 0);
  bool sendFailed(const std::string& reason);

  // At start-up, before serve(), in a worker started with --module-cache-dir: the daemon's
  // first message must be its ModuleCacheKey (proto/agileos/v1/worker_control.proto). Returns
  // the 32-byte key, or nullopt with *error (nothing within `timeout`, a closed channel, another
  // message, a key of the wrong size); the worker then runs without the cache.
  std::optional<std::string> receiveModuleCacheKey(std::chrono::milliseconds timeout, std::string* error);

  // Returns when the daemon asks for shutdown or goes away.
  void serve(WorkerRuntime& runtime);

  void contextTainted(ClientId client, const std::string& reason) override;

  // How often serve() reports usage (WorkerUsage) while clients are attached. Set before serve().
  void setUsageInterval(std::chrono::milliseconds interval) { usageInterval_ = interval; }

 private:
  bool send(const v1::internal::WorkerToDaemon& message);
  // Usage of every attached client (or of `only`) and the call counts, to the daemon.
  void sendUsage(const WorkerRuntime& runtime, std::optional<ClientId> only = std::nullopt);

  int fd_;
  std::chrono::milliseconds usageInterval_{1000};
  std::mutex writeMutex_;
  std::mutex taintMutex_;
  bool taintReported_ = false;
};

}  // namespace agileos::worker
