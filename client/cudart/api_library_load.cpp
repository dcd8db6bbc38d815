// Device code loaded at run time through the runtime API (cudaLibraryLoadData and friends):
// the session's code images (client/session/code_images.h), which go through the worker's
// kernel memory guard like any registered fatbin; kernels are resolved by name and launched
// with cudaLaunchKernel like registered ones.
//
// A cudaLibrary_t and a cudaKernel_t are addresses of records here; every handle the program
// passes is looked up among the live ones before use.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/session/code_images.h"
#include "client/session/error_state.h"
#include "client/session/module_registry.h"

namespace {

using namespace agileos::client;

struct LibraryKernel {
  std::string name;
};

struct LibraryRecord {
  std::uint64_t module = 0;
  std::map<std::string, std::unique_ptr<LibraryKernel>> kernels;
  std::map<std::string, DeviceVariable> globals;  // resolved by cudaLibraryGetGlobal
};

std::mutex librariesMutex;
std::map<const void*, std::unique_ptr<LibraryRecord>> libraries;  // by cudaLibrary_t

cudaError_t loadImage(cudaLibrary_t* library, std::string image,
                      std::vector<std::string> relocatableObjects = {}) {
  std::uint64_t module = 0;
  if (cudaError_t error = loadCodeImage(std::move(image), &module, std::move(relocatableObjects));
      error != cudaSuccess)
    return error;
  auto record = std::make_unique<LibraryRecord>();
  record->module = module;
  std::lock_guard lock(librariesMutex);
  *library = reinterpret_cast<cudaLibrary_t>(record.get());
  libraries.emplace(record.get(), std::move(record));
  return cudaSuccess;
}

}  // namespace

extern "C" {

// JIT and library options are hints the worker's loader does not need (it chooses and
// compiles the code itself); they are accepted and ignored.
cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption*, void**,
                                unsigned int, cudaLibraryOption*, void**, unsigned int) {
  if (library == nullptr || code == nullptr) return recordError(cudaErrorInvalidValue);
  std::string image;
  std::vector<std::string> relocatableObjects;  // a -rdc wrapper's (code_images.h)
  if (cudaError_t error = copyCodeImage(code, &image, &relocatableObjects); error != cudaSuccess)
    return recordError(error);
  return recordError(loadImage(library, std::move(image), std::move(relocatableObjects)));
}

cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* fileName, cudaJitOption*, void**,
                                    unsigned int, cudaLibraryOption*, void**, unsigned int) {
  if (library == nullptr || fileName == nullptr) return recordError(cudaErrorInvalidValue);
  std::string image;
  if (cudaError_t error = readCodeImageFile(fileName, &image); error != cudaSuccess)
    return recordError(error);
  return recordError(loadImage(library, std::move(image)));
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  std::unique_ptr<LibraryRecord> record;
  {
    std::lock_guard lock(librariesMutex);
    auto it = libraries.find(library);
    if (it == libraries.end()) return recordError(cudaErrorInvalidResourceHandle);
    record = std::move(it->second);
    libraries.erase(it);
  }
  for (const auto& [name, kernel] : record->kernels)
    ModuleRegistry::instance().removeLibraryKernel(kernel.get());
  for (const auto& [name, global] : record->globals)
    ModuleRegistry::instance().removeLoadedVariable(global.dptr);
  return recordError(unloadCodeImage(record->module));
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) {
  if (kernel == nullptr || name == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(librariesMutex);  // held across the call: the library cannot be unloaded meanwhile
  auto it = libraries.find(library);
  if (it == libraries.end()) return recordError(cudaErrorInvalidResourceHandle);
  LibraryRecord& record = *it->second;
  if (auto found = record.kernels.find(name); found != record.kernels.end()) {
    *kernel = reinterpret_cast<cudaKernel_t>(found->second.get());
    return cudaSuccess;
  }
  KernelLayout layout;
  if (cudaError_t error = codeImageKernel(record.module, name, &layout); error != cudaSuccess)
    return recordError(error);
  auto entry = std::make_unique<LibraryKernel>(LibraryKernel{name});
  ModuleRegistry::instance().addLibraryKernel(entry.get(), std::move(layout));
  *kernel = reinterpret_cast<cudaKernel_t>(entry.get());
  record.kernels.emplace(name, std::move(entry));
  return cudaSuccess;
}

// A __device__ or __constant__ variable of the library, registered so that copies may name it; a
// __managed__ variable answers its managed memory (bound at the load), as natively.
cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library, const char* name) {
  if (name == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(librariesMutex);  // held across the call: the library cannot be unloaded meanwhile
  auto it = libraries.find(library);
  if (it == libraries.end()) return recordError(cudaErrorInvalidResourceHandle);
  LibraryRecord& record = *it->second;
  DeviceVariable variable;
  if (codeImageManagedVariable(record.module, name, &variable) != cudaSuccess) {
    auto found = record.globals.find(name);
    if (found == record.globals.end()) {
      if (cudaError_t error = codeImageVariable(record.module, name, &variable); error != cudaSuccess)
        return recordError(error);
      ModuleRegistry::instance().addLoadedVariable(variable);
      found = record.globals.emplace(name, variable).first;
    }
    variable = found->second;
  }
  if (dptr != nullptr) *dptr = reinterpret_cast<void*>(variable.dptr);
  if (bytes != nullptr) *bytes = variable.size;
  return cudaSuccess;
}

// A __managed__ variable's memory, bound when the library was loaded (client/session/code_images.h).
cudaError_t cudaLibraryGetManaged(void** dptr, size_t* bytes, cudaLibrary_t library, const char* name) {
  if (name == nullptr) return recordError(cudaErrorInvalidValue);
  std::lock_guard lock(librariesMutex);
  auto it = libraries.find(library);
  if (it == libraries.end()) return recordError(cudaErrorInvalidResourceHandle);
  DeviceVariable variable;
  if (codeImageManagedVariable(it->second->module, name, &variable) != cudaSuccess)
    return recordError(cudaErrorSymbolNotFound);
  if (dptr != nullptr) *dptr = reinterpret_cast<void*>(variable.dptr);
  if (bytes != nullptr) *bytes = variable.size;
  return cudaSuccess;
}

}  // extern "C"
