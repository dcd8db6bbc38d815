// Device code loaded at run time through the runtime API (cudaLibraryLoadData and friends):
// the image is sent to the worker as it is (ModuleLoadImage), where it goes through the
// kernel memory guard like any registered fatbin; kernels are resolved by name
// (ModuleGetFunction) and launched with cudaLaunchKernel like registered ones.
//
// A cudaLibrary_t and a cudaKernel_t are addresses of records here; every handle the program
// passes is looked up among the live ones before use.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "client/cudart/error_state.h"
#include "client/cudart/module_registry.h"
#include "client/cudart/runtime.h"

namespace {

using agileos::client::invoke;
using agileos::client::ModuleRegistry;
using agileos::client::recordError;
namespace v1 = agileos::v1;

constexpr std::uint64_t kMaxImageBytes = 512ull << 20;
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;

struct LibraryKernel {
  std::string name;
};

struct LibraryRecord {
  std::uint64_t module = 0;
  std::map<std::string, std::unique_ptr<LibraryKernel>> kernels;
};

std::mutex librariesMutex;
std::map<const void*, std::unique_ptr<LibraryRecord>> libraries;  // by cudaLibrary_t

template <typename T>
T readAt(const unsigned char* base, std::size_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof value);
  return value;
}

// The size of the image at `code`, found the way the driver finds it: a fatbin's header, an ELF
// file's headers (the end of its last section or header table), else PTX text up to its NUL.
// 0 if it cannot be sized.
std::uint64_t imageSize(const void* code) {
  const auto* bytes = static_cast<const unsigned char*>(code);
  if (readAt<std::uint32_t>(bytes, 0) == kFatbinMagic) {
    return readAt<std::uint16_t>(bytes, 6) + readAt<std::uint64_t>(bytes, 8);
  }
  if (std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    if (bytes[4] != 2) return 0;  // ELFCLASS64 only: CUDA cubins are 64-bit
    const auto phoff = readAt<std::uint64_t>(bytes, 0x20), shoff = readAt<std::uint64_t>(bytes, 0x28);
    const auto phentsize = readAt<std::uint16_t>(bytes, 0x36), phnum = readAt<std::uint16_t>(bytes, 0x38);
    const auto shentsize = readAt<std::uint16_t>(bytes, 0x3A), shnum = readAt<std::uint16_t>(bytes, 0x3C);
    if (shoff > kMaxImageBytes || phoff > kMaxImageBytes || shentsize < 0x28) return 0;
    std::uint64_t end = std::max<std::uint64_t>(shoff + std::uint64_t{shnum} * shentsize,
                                                phoff + std::uint64_t{phnum} * phentsize);
    for (std::uint16_t i = 0; i < shnum; ++i) {
      const std::uint64_t header = shoff + std::uint64_t{i} * shentsize;
      const auto type = readAt<std::uint32_t>(bytes, header + 4);
      const auto offset = readAt<std::uint64_t>(bytes, header + 0x18),
                 size = readAt<std::uint64_t>(bytes, header + 0x20);
      if (type != 8 /* SHT_NOBITS */ && offset <= kMaxImageBytes && size <= kMaxImageBytes) {
        end = std::max(end, offset + size);
      }
    }
    return end <= kMaxImageBytes ? end : 0;
  }
  const std::size_t length = strnlen(static_cast<const char*>(code), kMaxImageBytes);
  return length < kMaxImageBytes ? length + 1 : 0;
}

cudaError_t loadImage(cudaLibrary_t* library, std::string image) {
  v1::CallRequest request;
  request.mutable_module_load_image()->set_image(std::move(image));
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  auto record = std::make_unique<LibraryRecord>();
  record->module = reply.module_loaded().module();
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
  const std::uint64_t size = imageSize(code);
  if (size == 0) return recordError(cudaErrorInvalidKernelImage);
  return recordError(loadImage(library, std::string(static_cast<const char*>(code), size)));
}

cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* fileName, cudaJitOption*, void**,
                                    unsigned int, cudaLibraryOption*, void**, unsigned int) {
  if (library == nullptr || fileName == nullptr) return recordError(cudaErrorInvalidValue);
  std::ifstream file(fileName, std::ios::binary);
  if (!file) return recordError(cudaErrorFileNotFound);
  std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.empty() || image.size() > kMaxImageBytes) return recordError(cudaErrorInvalidKernelImage);
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
  v1::CallRequest request;
  request.mutable_module_unload()->set_module(record->module);
  v1::CallReply reply;
  return recordError(invoke(request, &reply));
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
  v1::CallRequest request;
  auto* get = request.mutable_module_get_function();
  get->set_module(record.module);
  get->set_name(name);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return recordError(error);
  auto entry = std::make_unique<LibraryKernel>(LibraryKernel{name});
  ModuleRegistry::instance().addLibraryKernel(entry.get(),
                                              ModuleRegistry::kernelLayout(reply.function_info()));
  *kernel = reinterpret_cast<cudaKernel_t>(entry.get());
  record.kernels.emplace(name, std::move(entry));
  return cudaSuccess;
}

}  // extern "C"
