// ModuleRegistry: the fatbins, kernels and variables the program registered
// through __cudaRegister* (untrusted side).
//
// The client never interprets a fatbin beyond finding its length; it sends
// the bytes and the registered names to the worker, which parses, chooses and
// loads the code and returns each kernel's parameter layout. Loading is lazy:
// a module is sent on the first use of one of its kernels or variables, as
// cudart's lazy loading does, so programs that never use a module never pay
// for it.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "agileos/v1/client_api.pb.h"

namespace agileos::client {

struct KernelLayout {
  std::uint64_t token = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> params;  // (offset, size)
  std::uint32_t bufferSize = 0;
  std::int32_t maxThreadsPerBlock = 0;  // 0: unknown
  std::uint32_t staticSharedBytes = 0;
  // Its PTX uses system-scope atomics (FunctionInfo.system_scope_atomics; system_atomics.h).
  bool systemScopeAtomics = false;
};

struct DeviceVariable {
  std::uint64_t dptr = 0;
  std::uint64_t size = 0;
};

class ModuleRegistry {
 public:
  static ModuleRegistry& instance();

  // __cudaRegisterFatBinary: copies the fatbin the wrapper points to. Never
  // returns null: a malformed wrapper yields a handle whose kernels fail to launch.
  void** registerFatbin(const void* wrapper);
  void registerFunction(void** handle, const void* hostFunction, const char* deviceName);
  void registerVariable(void** handle, const void* hostVariable, const char* deviceName);
  // __cudaRegisterManagedVar: *hostPointer (the program's pointer to the variable, which every
  // host access goes through) is set when the module loads (initModule, or the first use of one
  // of its kernels or variables) to the variable's managed memory, where the module's kernels
  // reach it too (ptx/managed_variables.h). The symbol API then knows the variable by that address.
  void registerManagedVariable(void** handle, void** hostPointer, const char* deviceName, std::size_t size);
  // __cudaInitModule: loads the module now; true once its managed variables' pointers are set.
  bool initModule(void** handle);
  void unregister(void** handle);

  // True when hostFunction was registered with __cudaRegisterFunction.
  bool isRegisteredKernel(const void* hostFunction) const;
  // The device name hostFunction was registered with (cudaFuncGetName), or null.
  // The string lives until the kernel's fatbin is unregistered.
  const char* kernelName(const void* hostFunction) const;
  // Resolves a kernel by its host stub address, loading its module if needed.
  cudaError_t kernel(const void* hostFunction, KernelLayout* out);
  // Resolves a __device__/__constant__ variable by its host shadow address.
  cudaError_t variable(const void* hostVariable, DeviceVariable* out);
  // Kernels of modules loaded at run time (cudaLibraryGetKernel): `handle` is the cudaKernel_t
  // the program got, which it passes to cudaLaunchKernel like a host stub.
  void addLibraryKernel(const void* handle, KernelLayout layout);
  void removeLibraryKernel(const void* handle);

  // Variables of modules loaded at run time (cuModuleGetGlobal), until their module unloads.
  void addLoadedVariable(const DeviceVariable& variable);
  void removeLoadedVariable(std::uint64_t dptr);

  // True if [p, p+bytes) lies inside one loaded module variable.
  bool isDeviceVariableRange(std::uint64_t p, std::uint64_t bytes) const;
  // True when p lies inside a loaded module variable (for cudaMemcpyDefault).
  bool isDeviceVariableAddress(std::uint64_t p) const;

 private:
  struct Fatbin;
  struct HostSymbol {
    Fatbin* fatbin = nullptr;
    std::string name;
  };

  cudaError_t ensureLoaded(Fatbin& fatbin);
  cudaError_t bindManagedVariables(Fatbin& fatbin, const v1::ModuleLoaded& loaded);
  static KernelLayout layoutOf(const v1::FunctionInfo& info);

 public:
  // The layout the worker reported for a kernel.
  static KernelLayout kernelLayout(const v1::FunctionInfo& info) { return layoutOf(info); }

 private:
  Fatbin* findFatbin(void** handle) const;  // caller holds mutex_

  mutable std::shared_mutex mutex_;
  std::map<Fatbin*, std::unique_ptr<Fatbin>> fatbins_;
  std::unordered_map<const void*, HostSymbol> functions_;
  std::unordered_map<const void*, HostSymbol> variables_;
  std::unordered_map<const void*, KernelLayout> libraryKernels_;
  std::map<std::uint64_t, std::uint64_t> variableRanges_;  // base -> size, loaded variables only
};

}  // namespace agileos::client
