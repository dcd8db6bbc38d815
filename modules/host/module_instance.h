// One client's instance of a protected module, running its plugin inside the trusted worker.
//
// Invariants:
//  - Every control call is checked BEFORE the plugin sees it: the command id is in the plugin's
//    table and the request size lies in the command's [min, max]. A refused call never reaches
//    the plugin.
//  - The plugin only sees worker-owned copies: the request is copied out of the caller's bytes
//    (which may be client-shared memory) into a private buffer, the response is written into a
//    private buffer of the command's max_response_bytes and handed back only if the reported
//    size fits (otherwise it is discarded and the call fails).
//  - Calls on one instance (init, control, cleanup) are serialized by a mutex. The host
//    callbacks work only on the thread currently inside such a call; from any other thread (a
//    plugin's own thread, or after the call returned) they are refused with AGILEOS_MODULE_EPERM.
//  - The plugin's protected memory goes through InstanceAllocations: it can only free, read or
//    write its own allocations. At shutdown, after host_cleanup_module, whatever it left is
//    revoked (freed) and reported to the log sink.
//  - I/O mappings and DMA registrations are recorded per instance: the plugin can only undo its
//    own, and whatever it left is undone after host_cleanup_module (mappings unmapped,
//    registrations dropped), before its protected memory is revoked.
//  - Device constants (publish_device_constant) are readable from any thread (the worker's
//    code-loading path) under their own lock; they never leave the worker except as immediates
//    in the client's linked device code, where the guard keeps user code from using them.
//  - The instance holds its PluginLibrary, so the plugin's code stays loaded while it lives.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agileos/module_abi.h"
#include "modules/host/host_resources.h"
#include "modules/host/instance_allocations.h"
#include "modules/host/plugin_library.h"
#include "modules/host/protected_memory.h"

namespace agileos::modules {

struct ModuleInstanceConfig {
  std::string module_name;
  std::string module_version;
  std::uint64_t client_id = 0;
  std::string config_json = "{}";
  // Cap on the instance's live protected memory in bytes (0: only the memory manager's limit).
  std::uint64_t protected_limit_bytes = 0;
  // The connected socket to the module's service (owned by the caller), or -1; empty: none.
  std::function<int()> service_fd;
  // Where the plugin's log lines and the instance's own reports (revocations) go; empty: dropped.
  std::function<void(int level, std::string_view message)> log;
};

class ModuleInstance {
 public:
  // Creates the instance and calls host_init_module. `memory` must outlive the instance. Returns
  // null with *error set if the plugin refused; what it had allocated is revoked then.
  // `resources` (may be null: the callbacks needing it are refused with ENOTSUP) must outlive it.
  static std::unique_ptr<ModuleInstance> create(std::shared_ptr<const PluginLibrary> library,
                                                ModuleInstanceConfig config, ProtectedMemory& memory,
                                                std::string* error, HostResources* resources = nullptr);

  ~ModuleInstance();  // shutdown()
  ModuleInstance(const ModuleInstance&) = delete;
  ModuleInstance& operator=(const ModuleInstance&) = delete;

  // Runs `command` with a copy of `request`. Returns AGILEOS_MODULE_OK with the response in
  // *response, or a negative code with *error set and *response cleared. Refusals before the
  // plugin: AGILEOS_MODULE_ENOTSUP (unknown command), AGILEOS_MODULE_EINVAL (request size),
  // AGILEOS_MODULE_EPERM (instance shut down). After it: the plugin's own code, or
  // AGILEOS_MODULE_ERANGE if it reported more response bytes than its buffer holds.
  int control(std::uint32_t command, std::string_view request, std::string* response, std::string* error);

  // Calls host_cleanup_module, then revokes every protected allocation the plugin left.
  // Idempotent: later calls return an empty report. Control calls are refused afterwards.
  RevocationReport shutdown();

  // The constants the plugin published for its device code (name -> value).
  std::map<std::string, std::uint64_t> deviceConstants() const;

  // The client freed the allocation starting at `device_address`: every DMA registration of it
  // is revoked (the plugin is told through host_module_dma_revoked first, if it exports it).
  // Returns how many were revoked.
  std::size_t revokeDmaFor(std::uint64_t device_address);
  // The same for every registration (a device reset frees all of the client's memory).
  std::size_t revokeAllDma();

  std::size_t liveIoMappings() const;
  std::size_t liveDmaRegistrations() const;

  const std::string& moduleName() const { return config_.module_name; }
  std::uint64_t clientId() const { return config_.client_id; }
  const PluginLibrary& library() const { return *library_; }

 private:
  ModuleInstance(std::shared_ptr<const PluginLibrary> library, ModuleInstanceConfig config,
                 ProtectedMemory& memory, HostResources* resources);

  // The host callbacks (agileos_module_host_api); `host` is the ModuleInstance.
  static int hostAlloc(void* host, std::uint64_t bytes, std::uint64_t* device_address);
  static int hostFree(void* host, std::uint64_t device_address);
  static int hostWrite(void* host, std::uint64_t device_address, const void* src, std::uint64_t bytes);
  static int hostRead(void* host, std::uint64_t device_address, void* dst, std::uint64_t bytes);
  static int hostServiceFd(void* host);
  static void hostLog(void* host, int level, const char* message);
  static int hostExportProtected(void* host, std::uint64_t device_address, int* fd);
  static int hostMapIo(void* host, int fd, std::uint64_t offset, std::uint64_t bytes, std::uint32_t flags,
                       std::uint64_t* address);
  static int hostUnmapIo(void* host, std::uint64_t address);
  static int hostRegisterDma(void* host, std::uint64_t device_address, std::uint64_t bytes,
                             std::uint64_t* registration);
  static int hostUnregisterDma(void* host, std::uint64_t registration);
  static int hostExportDma(void* host, std::uint64_t registration, int* fd, std::uint64_t* handle_bytes,
                           std::uint64_t* offset);
  static int hostPublishConstant(void* host, const char* name, std::uint64_t value);
  // The instance if the calling thread is inside a call on it, else null.
  static ModuleInstance* activeOn(void* host);
  template <typename Body>
  static int guarded(void* host, Body body) noexcept;

  void log(int level, std::string_view message) const;
  // Revokes what is left and logs a report if anything was. Caller holds mutex_.
  RevocationReport revokeLocked();
  // Revokes the registrations whose address `matches`, telling the plugin of each.
  std::size_t revokeDmaWhere(const std::function<bool(std::uint64_t)>& matches);
  // Unmaps the I/O mappings and drops the DMA registrations left. Caller holds mutex_.
  void releaseIoAndDmaLocked();

  // Marks the calling thread as inside a plugin call for its scope. Caller holds mutex_.
  class ActiveCall {
   public:
    explicit ActiveCall(ModuleInstance& instance) : instance_(instance) {
      instance_.active_thread_.store(std::this_thread::get_id());
    }
    ~ActiveCall() { instance_.active_thread_.store(std::thread::id()); }
    ActiveCall(const ActiveCall&) = delete;
    ActiveCall& operator=(const ActiveCall&) = delete;

   private:
    ModuleInstance& instance_;
  };

  const std::shared_ptr<const PluginLibrary> library_;
  const ModuleInstanceConfig config_;
  agileos_module_host_api api_{};

  mutable std::mutex mutex_;                      // serializes every call into the plugin
  std::atomic<std::thread::id> active_thread_{};  // the thread inside a call, or none
  InstanceAllocations allocations_;               // guarded by mutex_ (touched by active_thread_)
  HostResources* const resources_;                // may be null
  struct DmaRegistration {
    std::uint64_t address = 0;
    std::uint64_t bytes = 0;
  };
  std::map<std::uint64_t, std::uint64_t> io_mappings_;  // address -> bytes; guarded by mutex_
  std::map<std::uint64_t, DmaRegistration> dma_;        // id -> range; guarded by mutex_
  std::uint64_t next_dma_id_ = 1;
  mutable std::mutex constants_mutex_;
  std::map<std::string, std::uint64_t> constants_;  // guarded by constants_mutex_
  void* plugin_instance_ = nullptr;                 // the plugin's opaque instance
  bool live_ = false;                               // init succeeded, cleanup not yet called
  bool shut_down_ = false;
  std::vector<unsigned char> request_buffer_;   // worker-owned copy of the request
  std::vector<unsigned char> response_buffer_;  // worker-owned response, max_response_bytes
};

}  // namespace agileos::modules
