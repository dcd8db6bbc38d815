#include "client/session/module_registry.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "client/common/log.h"
#include "client/session/code_images.h"
#include "client/session/fatbin_copy.h"
#include "client/session/fatbin_layout.h"
#include "client/session/host_allocations.h"
#include "client/session/own_memory.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

// Copies the fatbin a wrapper points to, and the relocatable objects a version-2 wrapper lists
// (fatbin_copy.h). Objects that cannot be copied are left out (the linked image may still load).
bool copyFatbin(const void* wrapperAddress, std::string* image, std::vector<std::string>* relocatableObjects,
                std::string* problem) {
  FatbinWrapper wrapper{};
  if (wrapperAddress == nullptr || !readOwnMemory(wrapperAddress, &wrapper, sizeof wrapper)) {
    *problem = "unreadable fatbin wrapper";
    return false;
  }
  if (wrapper.magic != kFatbinWrapperMagic) {
    *problem = "bad fatbin wrapper magic";
    return false;
  }
  if (!copyFatbinContainer(wrapper.data, image, problem)) return false;
  if (std::string objectsProblem; !copyPrelinkedObjects(wrapper, relocatableObjects, &objectsProblem)) {
    AGILEOS_LOG_WARN("__cudaRegisterFatBinary: %s; the module's linked image is sent alone",
                     objectsProblem.c_str());
  }
  return true;
}

}  // namespace

struct ModuleRegistry::Fatbin {
  std::string image;
  std::vector<std::string> relocatableObjects;  // a separately compiled image's (fatbin_copy.h)
  std::string problem;                          // non-empty: the wrapper was malformed
  std::vector<std::string> functionNames;
  std::vector<std::string> variableNames;
  struct ManagedVariable {
    std::string name;
    void** hostPointer = nullptr;  // the program's pointer, set once the memory is bound
    std::uint64_t size = 0;
    void* address = nullptr;  // the managed memory, once bound
  };
  std::vector<ManagedVariable> managedVariables;

  std::mutex loadMutex;
  bool loadAttempted = false;
  cudaError_t loadError = cudaSuccess;
  std::uint64_t moduleToken = 0;
  std::unordered_map<std::string, KernelLayout> kernels;
  std::unordered_map<std::string, cudaError_t> kernelErrors;
  std::unordered_map<std::string, DeviceVariable> variables;
};

ModuleRegistry& ModuleRegistry::instance() {
  static ModuleRegistry* registry = new ModuleRegistry();  // never destroyed: used from atexit handlers
  return *registry;
}

void** ModuleRegistry::registerFatbin(const void* wrapper) {
  auto fatbin = std::make_unique<Fatbin>();
  if (!copyFatbin(wrapper, &fatbin->image, &fatbin->relocatableObjects, &fatbin->problem)) {
    AGILEOS_LOG_ERROR("__cudaRegisterFatBinary: %s; kernels of this module will fail to launch",
                      fatbin->problem.c_str());
  }
  Fatbin* raw = fatbin.get();
  std::unique_lock lock(mutex_);
  fatbins_.emplace(raw, std::move(fatbin));
  return reinterpret_cast<void**>(raw);
}

ModuleRegistry::Fatbin* ModuleRegistry::findFatbin(void** handle) const {
  auto it = fatbins_.find(reinterpret_cast<Fatbin*>(handle));
  return it == fatbins_.end() ? nullptr : it->second.get();
}

void ModuleRegistry::registerFunction(void** handle, const void* hostFunction, const char* deviceName) {
  std::unique_lock lock(mutex_);
  Fatbin* fatbin = findFatbin(handle);
  if (fatbin == nullptr || deviceName == nullptr) {
    AGILEOS_LOG_ERROR("__cudaRegisterFunction with an unknown module handle; ignored");
    return;
  }
  fatbin->functionNames.emplace_back(deviceName);
  functions_[hostFunction] = {fatbin, deviceName};
}

void ModuleRegistry::registerVariable(void** handle, const void* hostVariable, const char* deviceName) {
  std::unique_lock lock(mutex_);
  Fatbin* fatbin = findFatbin(handle);
  if (fatbin == nullptr || deviceName == nullptr) {
    AGILEOS_LOG_ERROR("__cudaRegisterVar with an unknown module handle; ignored");
    return;
  }
  fatbin->variableNames.emplace_back(deviceName);
  variables_[hostVariable] = {fatbin, deviceName};
}

void ModuleRegistry::registerManagedVariable(void** handle, void** hostPointer, const char* deviceName,
                                             std::size_t size) {
  std::unique_lock lock(mutex_);
  Fatbin* fatbin = findFatbin(handle);
  if (fatbin == nullptr || deviceName == nullptr || hostPointer == nullptr || size == 0) {
    AGILEOS_LOG_ERROR("__cudaRegisterManagedVar with an unknown module handle or no variable; ignored");
    return;
  }
  fatbin->managedVariables.push_back({deviceName, hostPointer, size, nullptr});
}

bool ModuleRegistry::initModule(void** handle) {
  Fatbin* fatbin = nullptr;
  {
    std::shared_lock lock(mutex_);
    fatbin = findFatbin(handle);
  }
  if (fatbin == nullptr) return false;
  const cudaError_t error = ensureLoaded(*fatbin);
  if (error != cudaSuccess) {
    AGILEOS_LOG_ERROR("__cudaInitModule: the module with __managed__ variables did not load (error %d)",
                      static_cast<int>(error));
  }
  return error == cudaSuccess;
}

void ModuleRegistry::unregister(void** handle) {
  std::unique_ptr<Fatbin> fatbin;
  {
    std::unique_lock lock(mutex_);
    auto it = fatbins_.find(reinterpret_cast<Fatbin*>(handle));
    if (it == fatbins_.end()) return;
    fatbin = std::move(it->second);
    fatbins_.erase(it);
    std::erase_if(functions_, [&](const auto& entry) { return entry.second.fatbin == fatbin.get(); });
    std::erase_if(variables_, [&](const auto& entry) { return entry.second.fatbin == fatbin.get(); });
    for (const auto& [name, variable] : fatbin->variables) variableRanges_.erase(variable.dptr);
  }
  // At process exit nothing is sent: the worker releases the module when the session ends.
  if (fatbin->moduleToken != 0) unloadCodeImage(fatbin->moduleToken);
  // The worker freed the managed variables' memory with the module; the program's pointers are
  // left as they are (host code of a module that is gone must not run).
  for (const Fatbin::ManagedVariable& variable : fatbin->managedVariables) {
    if (variable.address != nullptr) HostAllocations::instance().forgetManagedVariable(variable.address);
  }
}

cudaError_t ModuleRegistry::ensureLoaded(Fatbin& fatbin) {
  std::lock_guard lock(fatbin.loadMutex);
  if (fatbin.loadAttempted) return fatbin.loadError;
  if (!fatbin.problem.empty()) {
    fatbin.loadAttempted = true;
    fatbin.loadError = cudaErrorInvalidKernelImage;
    return fatbin.loadError;
  }
  v1::CallRequest request;
  v1::ModuleLoad* load = request.mutable_module_load();
  load->set_fatbin(fatbin.image);
  for (const std::string& object : fatbin.relocatableObjects) load->add_relocatable_objects(object);
  {
    std::shared_lock registryLock(mutex_);
    for (const auto& name : fatbin.functionNames) load->add_function_names(name);
    for (const auto& name : fatbin.variableNames) load->add_variable_names(name);
    for (const auto& variable : fatbin.managedVariables) load->add_managed_variable_names(variable.name);
  }
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaErrorNoDevice || error == cudaErrorDevicesUnavailable) {
    return error;  // not attempted: the connection, not the module, failed
  }
  fatbin.loadAttempted = true;
  fatbin.loadError = error;
  // Never sent again (a module loads once, or keeps its error): a -rdc image's objects are as
  // large as the image, and only the load needed them.
  std::vector<std::string>().swap(fatbin.relocatableObjects);
  if (error != cudaSuccess) return error;
  const v1::ModuleLoaded& loaded = reply.module_loaded();
  fatbin.moduleToken = loaded.module();
  for (const v1::FunctionInfo& info : loaded.functions()) {
    if (info.error() != 0) {
      fatbin.kernelErrors[info.name()] = static_cast<cudaError_t>(info.error());
      continue;
    }
    fatbin.kernels[info.name()] = layoutOf(info);
  }
  {
    std::unique_lock registryLock(mutex_);
    for (const v1::VariableInfo& info : loaded.variables()) {
      if (info.error() != 0) continue;
      fatbin.variables[info.name()] = {info.dptr(), info.size()};
      variableRanges_[info.dptr()] = info.size();
    }
  }
  fatbin.loadError = bindManagedVariables(fatbin, loaded);
  return fatbin.loadError;
}

// Gives each managed variable its memory (HostAllocations::allocateManagedVariable: the worker
// fills it with the initial bytes and writes its address into the module's slot) and sets the
// program's pointer to it. A variable left unbound fails the module: its kernels would use a
// null pointer. The caller holds fatbin.loadMutex.
cudaError_t ModuleRegistry::bindManagedVariables(Fatbin& fatbin, const v1::ModuleLoaded& loaded) {
  if (fatbin.managedVariables.empty()) return cudaSuccess;
  std::unordered_map<std::string, const v1::VariableInfo*> infos;
  for (const v1::VariableInfo& info : loaded.managed_variables()) infos[info.name()] = &info;
  for (Fatbin::ManagedVariable& variable : fatbin.managedVariables) {
    auto it = infos.find(variable.name);
    if (it == infos.end() || it->second->error() != 0 || it->second->size() != variable.size) {
      AGILEOS_LOG_ERROR("__managed__ variable %s: the worker does not know it as the program registered it",
                        variable.name.c_str());
      return cudaErrorInvalidSymbol;
    }
    void* address = nullptr;
    if (cudaError_t error = HostAllocations::instance().allocateManagedVariable(
            fatbin.moduleToken, variable.name, variable.size, &address);
        error != cudaSuccess) {
      AGILEOS_LOG_ERROR("__managed__ variable %s: its memory could not be placed (error %d)",
                        variable.name.c_str(), static_cast<int>(error));
      return error;
    }
    variable.address = address;
    *variable.hostPointer = address;
    std::unique_lock registryLock(mutex_);
    variables_[address] = {&fatbin, variable.name};
    fatbin.variables[variable.name] = {reinterpret_cast<std::uint64_t>(address), variable.size};
  }
  return cudaSuccess;
}

KernelLayout ModuleRegistry::layoutOf(const v1::FunctionInfo& info) {
  KernelLayout layout;
  layout.token = info.token();
  layout.bufferSize = info.param_buffer_size();
  layout.maxThreadsPerBlock = info.max_threads_per_block();
  layout.staticSharedBytes = info.static_shared_bytes();
  layout.systemScopeAtomics = info.system_scope_atomics();
  for (const v1::KernelParam& param : info.params()) layout.params.emplace_back(param.offset(), param.size());
  return layout;
}

void ModuleRegistry::addLibraryKernel(const void* handle, KernelLayout layout) {
  std::unique_lock lock(mutex_);
  libraryKernels_[handle] = std::move(layout);
}

void ModuleRegistry::removeLibraryKernel(const void* handle) {
  std::unique_lock lock(mutex_);
  libraryKernels_.erase(handle);
}

void ModuleRegistry::addLoadedVariable(const DeviceVariable& variable) {
  std::unique_lock lock(mutex_);
  variableRanges_[variable.dptr] = variable.size;
}

void ModuleRegistry::removeLoadedVariable(std::uint64_t dptr) {
  std::unique_lock lock(mutex_);
  variableRanges_.erase(dptr);
}

bool ModuleRegistry::isRegisteredKernel(const void* hostFunction) const {
  std::shared_lock lock(mutex_);
  return functions_.contains(hostFunction) || libraryKernels_.contains(hostFunction);
}

const char* ModuleRegistry::kernelName(const void* hostFunction) const {
  std::shared_lock lock(mutex_);
  auto it = functions_.find(hostFunction);
  return it != functions_.end() ? it->second.name.c_str() : nullptr;
}

cudaError_t ModuleRegistry::kernel(const void* hostFunction, KernelLayout* out) {
  HostSymbol symbol;
  {
    std::shared_lock lock(mutex_);
    auto it = functions_.find(hostFunction);
    if (it == functions_.end()) {
      auto library = libraryKernels_.find(hostFunction);
      // What cudart 13 answers for a pointer that is not a registered kernel.
      if (library == libraryKernels_.end()) return cudaErrorInvalidResourceHandle;
      *out = library->second;
      return cudaSuccess;
    }
    symbol = it->second;
  }
  if (cudaError_t error = ensureLoaded(*symbol.fatbin); error != cudaSuccess) return error;
  std::lock_guard lock(symbol.fatbin->loadMutex);
  auto it = symbol.fatbin->kernels.find(symbol.name);
  if (it == symbol.fatbin->kernels.end()) {
    auto failure = symbol.fatbin->kernelErrors.find(symbol.name);
    return failure != symbol.fatbin->kernelErrors.end() ? failure->second : cudaErrorInvalidDeviceFunction;
  }
  *out = it->second;
  return cudaSuccess;
}

cudaError_t ModuleRegistry::variable(const void* hostVariable, DeviceVariable* out) {
  HostSymbol symbol;
  {
    std::shared_lock lock(mutex_);
    auto it = variables_.find(hostVariable);
    if (it == variables_.end()) return cudaErrorInvalidSymbol;
    symbol = it->second;
  }
  if (cudaError_t error = ensureLoaded(*symbol.fatbin); error != cudaSuccess) return error;
  std::lock_guard lock(symbol.fatbin->loadMutex);
  auto it = symbol.fatbin->variables.find(symbol.name);
  if (it == symbol.fatbin->variables.end()) return cudaErrorInvalidSymbol;
  *out = it->second;
  return cudaSuccess;
}

bool ModuleRegistry::isDeviceVariableRange(std::uint64_t p, std::uint64_t bytes) const {
  std::shared_lock lock(mutex_);
  auto it = variableRanges_.upper_bound(p);
  if (it == variableRanges_.begin()) return false;
  --it;
  const std::uint64_t offset = p - it->first;
  return offset < it->second && bytes <= it->second - offset;
}

bool ModuleRegistry::isDeviceVariableAddress(std::uint64_t p) const {
  std::shared_lock lock(mutex_);
  auto it = variableRanges_.upper_bound(p);
  if (it == variableRanges_.begin()) return false;
  --it;
  return p - it->first < it->second;
}

}  // namespace agileos::client
