// WorkerRuntime: the transport-independent core of a worker.
//
// It owns the attached clients' sessions (keyed by ClientId; a worker may
// serve several clients, each fenced by its own tables and allocations),
// authenticates each call by its session token, dispatches it, and attaches
// captured device output to the reply.
//
// Thread-safety: all methods are safe to call concurrently. Each client has a
// gate: calls that can free or destroy something (Exclusivity::kInvalidates)
// and the release of the session hold it exclusively, every other call holds it
// shared, so no call's validated pointers or handles can die before it uses them.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "worker/adapters/library_adapter.h"
#include "worker/call_context.h"
#include "worker/call_statistics.h"
#include "worker/device_output.h"
#include "worker/dispatcher.h"
#include "worker/protected_modules/admitted_module.h"
#include "worker/protected_modules/plugin_library_cache.h"

namespace agileos::worker {

class WorkerRuntime {
 public:
  WorkerRuntime(GpuBackend& gpu, memmgr::MemoryManager& memory, DeviceOutputCapture* output,
                TaintListener* taint);

  // Returns false if the client id or token is already attached, or if an instance of one of
  // `protectedModules` cannot be created (the reason is logged; nothing of the client is kept).
  // `guard` is the client's kernel memory guard setting (from the daemon).
  // `adapterOperations` are the library adapter operations the daemon admitted for it.
  // `protectedModules` are its admitted protected modules in load order (dependencies first).
  // `memoryQuotaBytes` is its device-memory quota (0: none), in force before its modules are
  // made, so their protected memory counts too. `pinnedHostQuotaBytes` bounds its page-locked
  // host memory (0: none may be pinned).
  bool attach(ClientId client, const std::string& sessionToken, const GuardConfig& guard = {},
              std::vector<std::string> adapterOperations = {},
              const std::vector<protected_modules::AdmittedModule>& protectedModules = {},
              std::uint64_t memoryQuotaBytes = 0,
              std::uint64_t pinnedHostQuotaBytes = kDefaultPinnedHostQuotaBytes);
  // Releases everything the client holds; returns false if it was not attached.
  bool release(ClientId client);
  // Releases every attached client (worker shutdown).
  void releaseAll();

  enum class CallStatus { kOk, kUnauthenticated };
  // Authenticates `sessionToken`, then runs the request. The reply is complete
  // (including a refusal) whenever kOk is returned.
  // `shared` is the shared-memory connection the call came over (null for gRPC).
  CallStatus call(const std::string& sessionToken, const v1::CallRequest& request, v1::CallReply& reply,
                  SharedMemoryChannel* shared = nullptr);

  // A session as a connection holds it for all its calls, so the token is looked up
  // once (the shared-memory transport). The binding keeps nothing alive that release()
  // needs: a released session's calls are refused (kUnauthenticated) like an unknown token's.
  struct Binding {
    std::shared_ptr<ClientSession> session;
    std::shared_ptr<std::shared_mutex> gate;
  };
  std::optional<Binding> bind(const std::string& sessionToken) const;
  CallStatus call(const Binding& binding, const v1::CallRequest& request, v1::CallReply& reply,
                  SharedMemoryChannel* shared = nullptr);

  std::size_t clientCount() const;

  // What the attached clients hold and have done, and the worker's call counts since it started
  // (the daemon's admin API and metrics). With `only`, that client's usage alone (its last report
  // before its release).
  void usage(v1::internal::WorkerUsage* usage, std::optional<ClientId> only = std::nullopt) const;

  // The worker's part of the kernel memory guard (cache, test hook). Set before serving.
  void setGuardContext(const WorkerGuardContext& guard) { guard_ = guard; }
  // The trusted library adapters this worker hosts. Set before serving.
  void setAdapters(std::unique_ptr<AdapterHost> adapters);
  // Whether shared-memory connections hold queued launches for launch chains (worker/launch_batch.h;
  // on unless the worker was started with --no-launch-chains). Set before serving.
  void setLaunchChains(bool enabled) { launchChains_ = enabled; }
  bool launchChains() const { return launchChains_; }
  // Experimental (--lone-launch-chains, off by default): a lone launch goes through a kept
  // one-node chain too (SharedMemoryChannel::loneLaunchChains). Set before serving.
  void setLoneLaunchChains(bool enabled) { loneLaunchChains_ = enabled; }
  bool loneLaunchChains() const { return loneLaunchChains_; }

  // The GPU the calls run on (the shared-memory transport registers its staging areas).
  GpuBackend& gpu() const { return gpu_; }

  // True if `sessionToken` belongs to an attached client (the shared-memory transport's
  // handshake). Each call is still authenticated again by call().
  bool isAttachedToken(const std::string& sessionToken) const;

  // The uid the daemon saw `client` connect with (SO_PEERCRED); kept until its release.
  void setPeerUid(ClientId client, uid_t uid);
  // Whether a connection from `uid` may reach this worker's endpoints: root, or the uid of an
  // attached client. Checked before a byte of the connection is read.
  bool admitsPeerUid(uid_t uid) const;

 private:
  using Attached = Binding;
  std::optional<Attached> findByToken(const std::string& token) const;

  GpuBackend& gpu_;
  memmgr::MemoryManager& memory_;
  DeviceOutputCapture* output_;
  WorkerGuardContext guard_;
  bool launchChains_ = true;
  bool loneLaunchChains_ = false;
  std::unique_ptr<AdapterHost> adapters_;
  TaintListener* taint_;
  Dispatcher dispatcher_;
  CallStatistics statistics_;
  protected_modules::PluginLibraryCache pluginLibraries_;  // every client's module instances share these

  mutable std::mutex mutex_;
  std::map<ClientId, Attached> clients_;
  std::unordered_map<std::string, ClientId> byToken_;
  std::map<ClientId, uid_t> peerUids_;  // setPeerUid; erased at release
};

}  // namespace agileos::worker
