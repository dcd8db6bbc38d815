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
#include "client/cudart/own_memory.h"
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

// Reads a T at `base + offset` without faulting; false if it is not readable (a header that
// points past the image's memory).
template <typename T>
bool readAt(const unsigned char* base, std::uint64_t offset, T* value) {
  return offset <= kMaxImageBytes && agileos::client::readOwnMemory(base + offset, value, sizeof *value);
}

// The length of the NUL-terminated text at `text` including its NUL, read page by page without
// faulting; 0 if no NUL comes within kMaxImageBytes or within readable memory.
std::uint64_t textSize(const unsigned char* text) {
  constexpr std::size_t kPage = 4096;
  char chunk[kPage];
  std::uint64_t at = 0;
  while (at < kMaxImageBytes) {
    // Up to the next page boundary: a text that ends right before an unreadable page is read whole.
    const std::size_t want = kPage - reinterpret_cast<std::uintptr_t>(text + at) % kPage;
    if (!agileos::client::readOwnMemory(text + at, chunk, want)) return 0;
    if (const void* nul = std::memchr(chunk, '\0', want); nul != nullptr)
      return at + static_cast<std::uint64_t>(static_cast<const char*>(nul) - chunk) + 1;
    at += want;
  }
  return 0;
}

// The size of the image at `code`, found the way the driver finds it: a fatbin's header, an ELF
// file's headers (the end of its last section or header table), else PTX text up to its NUL.
// 0 if it cannot be sized, including when a header points into memory the program cannot read:
// the program passed a bad image, and gets an error where the real runtime might crash.
std::uint64_t imageSize(const void* code) {
  const auto* bytes = static_cast<const unsigned char*>(code);
  std::uint32_t magic = 0;
  if (!readAt(bytes, 0, &magic)) return textSize(bytes);
  if (magic == kFatbinMagic) {
    std::uint16_t headerSize = 0;
    std::uint64_t entriesSize = 0;
    if (!readAt(bytes, 6, &headerSize) || !readAt(bytes, 8, &entriesSize) || entriesSize > kMaxImageBytes)
      return 0;
    return headerSize + entriesSize;
  }
  if (std::memcmp(&magic,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    std::uint8_t elfClass = 0;
    std::uint64_t phoff = 0, shoff = 0;
    std::uint16_t phentsize = 0, phnum = 0, shentsize = 0, shnum = 0;
    if (!readAt(bytes, 4, &elfClass) || elfClass != 2) return 0;  // ELFCLASS64 only: CUDA cubins are 64-bit
    if (!readAt(bytes, 0x20, &phoff) || !readAt(bytes, 0x28, &shoff) || !readAt(bytes, 0x36, &phentsize) ||
        !readAt(bytes, 0x38, &phnum) || !readAt(bytes, 0x3A, &shentsize) || !readAt(bytes, 0x3C, &shnum)) {
      return 0;
    }
    if (shoff > kMaxImageBytes || phoff > kMaxImageBytes || shentsize < 0x28) return 0;
    std::uint64_t end = std::max<std::uint64_t>(shoff + std::uint64_t{shnum} * shentsize,
                                                phoff + std::uint64_t{phnum} * phentsize);
    for (std::uint16_t i = 0; i < shnum; ++i) {
      const std::uint64_t header = shoff + std::uint64_t{i} * shentsize;
      std::uint32_t type = 0;
      std::uint64_t offset = 0, size = 0;
      if (!readAt(bytes, header + 4, &type) || !readAt(bytes, header + 0x18, &offset) ||
          !readAt(bytes, header + 0x20, &size)) {
        return 0;
      }
      if (type != 8 /* SHT_NOBITS */ && offset <= kMaxImageBytes && size <= kMaxImageBytes) {
        end = std::max(end, offset + size);
      }
    }
    return end <= kMaxImageBytes ? end : 0;
  }
  return textSize(bytes);
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
  std::string image(size, '\0');
  if (!agileos::client::readOwnMemory(code, image.data(), size))
    return recordError(cudaErrorInvalidKernelImage);
  return recordError(loadImage(library, std::move(image)));
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
