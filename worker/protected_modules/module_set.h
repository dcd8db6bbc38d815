// ModuleSet: the protected modules of ONE client session, made at attach from the daemon's
// admitted list (AttachClient.modules, load order: dependencies first).
//
// Invariants:
//  - Every module with a host library has exactly one ModuleInstance here, created in list
//    order; a set exists only if EVERY instance was created (create() refuses otherwise, after
//    destroying the ones it made, in reverse order).
//  - Module names are unique within a set, so a control call names one instance.
//  - The instances are destroyed in reverse order of creation (tearDown, at the latest the
//    destructor), while the WorkerProtectedMemory they allocate through still exists: each
//    plugin's cleanup runs, then what it left is revoked through the memory manager.
//  - The set is immutable between create() and tearDown(): lookups need no lock. The session
//    ensures no call is inside the set when tearDown() runs (its gate is held exclusively).
//  - The set only reaches the memory manager under its own client's id: one client's instances
//    can never be reached from, nor allocate for, another client.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memmgr/memory_manager.h"
#include "modules/host/module_instance.h"
#include "ptx/module_link.h"
#include "worker/backend/gpu_backend.h"
#include "worker/protected_modules/admitted_module.h"
#include "worker/protected_modules/plugin_library_cache.h"
#include "worker/protected_modules/worker_host_resources.h"
#include "worker/protected_modules/worker_protected_memory.h"

namespace agileos::worker::protected_modules {

// A module's device code, read and parsed once when the set is made (the path is trusted, from
// the daemon's pool; the PTX is checked by ptx::checkDeviceModule then).
struct DeviceCodeModule {
  std::string name;
  std::string version;
  std::string ptxPath;
  ptx::Module code;
};

class ModuleSet {
 public:
  // Creates the instances of `admitted`'s modules that have a host library, in order, opening
  // the libraries through `libraries`. Returns null with *error set (naming the module) if a
  // library cannot be opened, a plugin refuses its init, or the list is malformed (an empty or
  // duplicate name); nothing is left behind then. `memory` and `gpu` must outlive the set.
  static std::unique_ptr<ModuleSet> create(memmgr::ClientId client,
                                           const std::vector<AdmittedModule>& admitted,
                                           PluginLibraryCache& libraries, memmgr::MemoryManager& memory,
                                           GpuBackend& gpu, std::string* error);

  ~ModuleSet();
  ModuleSet(const ModuleSet&) = delete;
  ModuleSet& operator=(const ModuleSet&) = delete;

  // The instance of the module named `name`, or null (no such module, a module without a host
  // library, or the set is torn down).
  agileos::modules::ModuleInstance* find(std::string_view name) const;

  std::size_t instanceCount() const { return instances_.size(); }
  const std::vector<DeviceCodeModule>& deviceCode() const { return deviceCode_; }

  // The device code to link into this client's kernels, in load order, each with the constants
  // its instance has published (none for a module without a host library).
  std::vector<ptx::DeviceModule> deviceModulesForLinking() const;

  // Whether the set holds anything the guard must protect: any instance or device code.
  bool holdsProtectedState() const { return !instances_.empty() || !deviceCode_.empty(); }

  // The client freed the allocation at `device_address`: revoke every DMA registration of it.
  void revokeDmaFor(std::uint64_t device_address) const;
  // Every DMA registration of the client (before a device reset frees all its memory).
  void revokeAllDma() const;

  // Destroys the instances in reverse order of creation (tearDownInOrder). Idempotent.
  void tearDown();

 private:
  ModuleSet(memmgr::MemoryManager& memory, GpuBackend& gpu, memmgr::ClientId client)
      : client_(client), memory_(memory, gpu, client), resources_(memory, gpu, client) {}

  // Creates one instance and appends it; false with *error set if it cannot.
  bool addInstance(const AdmittedModule& module, PluginLibraryCache& libraries, std::string* error);
  // Reads, parses and checks a module's PTX and appends it; false with *error set if it cannot.
  bool addDeviceCode(const AdmittedModule& module, std::string* error);

  const memmgr::ClientId client_;
  WorkerProtectedMemory memory_;     // declared before instances_: destroyed after them
  WorkerHostResources resources_;    // likewise: unmaps what the instances left, after them
  std::vector<int> serviceSockets_;  // one per instance with a service; closed after them
  std::vector<std::unique_ptr<agileos::modules::ModuleInstance>> instances_;  // creation order
  std::vector<DeviceCodeModule> deviceCode_;
};

}  // namespace agileos::worker::protected_modules
