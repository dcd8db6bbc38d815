#include "client/session/code_images.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>

#include "agileos/v1/client_api.pb.h"
#include "client/common/connection.h"
#include "client/common/log.h"
#include "client/session/fatbin_copy.h"
#include "client/session/fatbin_layout.h"
#include "client/session/function_calls.h"
#include "client/session/host_allocations.h"
#include "client/session/own_memory.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

// The __managed__ variables of each loaded image (by the worker's module token), bound at its load.
// Never destroyed: a CUDA runtime in the program unloads its libraries from an exit handler.
std::mutex& gManagedMutex = *new std::mutex();
auto& gManagedVariables = *new std::map<std::uint64_t, std::unordered_map<std::string, DeviceVariable>>();

// Gives every managed variable the worker names its memory (the worker fills it with the initial
// bytes and writes its address into the module's slot). A variable left unbound would leave its
// kernels a null pointer, so any failure fails the load.
cudaError_t bindManagedVariables(std::uint64_t module, const v1::ModuleLoaded& loaded) {
  std::unordered_map<std::string, DeviceVariable> bound;
  for (const v1::VariableInfo& info : loaded.managed_variables()) {
    void* address = nullptr;
    if (info.size() == 0 || bound.count(info.name()) != 0) return cudaErrorInvalidKernelImage;
    if (cudaError_t error =
            HostAllocations::instance().allocateManagedVariable(module, info.name(), info.size(), &address);
        error != cudaSuccess) {
      for (const auto& [name, variable] : bound)
        HostAllocations::instance().forgetManagedVariable(reinterpret_cast<void*>(variable.dptr));
      return error;
    }
    bound[info.name()] = DeviceVariable{reinterpret_cast<std::uint64_t>(address), info.size()};
  }
  if (!bound.empty()) {
    std::lock_guard lock(gManagedMutex);
    gManagedVariables[module] = std::move(bound);
  }
  return cudaSuccess;
}

void forgetManagedVariables(std::uint64_t module) {
  std::lock_guard lock(gManagedMutex);
  auto it = gManagedVariables.find(module);
  if (it == gManagedVariables.end()) return;
  for (const auto& [name, variable] : it->second)
    HostAllocations::instance().forgetManagedVariable(reinterpret_cast<void*>(variable.dptr));
  gManagedVariables.erase(it);
}

// Reads a T at `base + offset` without faulting; false if it is not readable (a header that
// points past the image's memory).
template <typename T>
bool readAt(const unsigned char* base, std::uint64_t offset, T* value) {
  return offset <= kMaxCodeImageBytes && readOwnMemory(base + offset, value, sizeof *value);
}

// The length of the NUL-terminated text at `text` including its NUL, read page by page without
// faulting; 0 if no NUL comes within kMaxCodeImageBytes or within readable memory.
std::uint64_t textSize(const unsigned char* text) {
  constexpr std::size_t kPage = 4096;
  char chunk[kPage];
  std::uint64_t at = 0;
  while (at < kMaxCodeImageBytes) {
    // Up to the next page boundary: a text that ends right before an unreadable page is read whole.
    const std::size_t want = kPage - reinterpret_cast<std::uintptr_t>(text + at) % kPage;
    if (!readOwnMemory(text + at, chunk, want)) return 0;
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
  if (magic == kFatbinContainerMagic) {
    std::uint16_t headerSize = 0;
    std::uint64_t entriesSize = 0;
    if (!readAt(bytes, 6, &headerSize) || !readAt(bytes, 8, &entriesSize) || entriesSize > kMaxCodeImageBytes)
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
    if (shoff > kMaxCodeImageBytes || phoff > kMaxCodeImageBytes || shentsize < 0x28) return 0;
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
      if (type != 8 /* SHT_NOBITS */ && offset <= kMaxCodeImageBytes && size <= kMaxCodeImageBytes) {
        end = std::max(end, offset + size);
      }
    }
    return end <= kMaxCodeImageBytes ? end : 0;
  }
  return textSize(bytes);
}

}  // namespace

cudaError_t copyCodeImage(const void* code, std::string* image,
                          std::vector<std::string>* relocatableObjects) {
  // A wrapper names its fatbin; that fatbin is the image (one level: the fatbin's own magic is
  // checked by the worker).
  FatbinWrapper wrapper{};
  if (readOwnMemory(code, &wrapper, sizeof wrapper) && wrapper.magic == kFatbinWrapperMagic) {
    code = wrapper.data;
    std::string problem;
    if (relocatableObjects != nullptr && !copyPrelinkedObjects(wrapper, relocatableObjects, &problem))
      AGILEOS_LOG_WARN("a module image's relocatable objects are left out: %s", problem.c_str());
  }
  if (code == nullptr) return cudaErrorInvalidKernelImage;
  const std::uint64_t size = imageSize(code);
  if (size == 0) return cudaErrorInvalidKernelImage;
  image->assign(size, '\0');
  if (!readOwnMemory(code, image->data(), size)) return cudaErrorInvalidKernelImage;
  return cudaSuccess;
}

cudaError_t readCodeImageFile(const char* path, std::string* image) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return cudaErrorFileNotFound;
  image->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  if (image->empty() || image->size() > kMaxCodeImageBytes) return cudaErrorInvalidKernelImage;
  return cudaSuccess;
}

cudaError_t loadCodeImage(std::string image, std::uint64_t* module,
                          std::vector<std::string> relocatableObjects) {
  v1::CallRequest request;
  auto* load = request.mutable_module_load_image();
  load->set_image(std::move(image));
  for (std::string& object : relocatableObjects) load->add_relocatable_objects(std::move(object));
  load->set_bind_managed_variables(true);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  const std::uint64_t token = reply.module_loaded().module();
  if (cudaError_t error = bindManagedVariables(token, reply.module_loaded()); error != cudaSuccess) {
    unloadCodeImage(token);
    return error;
  }
  *module = token;
  return cudaSuccess;
}

void jitLogsOf(const std::string& ptx, bool verbose, std::string* info, std::string* error) {
  v1::CallRequest request;
  request.mutable_jit_log()->set_ptx(ptx);
  request.mutable_jit_log()->set_verbose(verbose);
  v1::CallReply reply;
  info->clear();
  error->clear();
  if (invoke(request, &reply) != cudaSuccess) return;
  *info = reply.jit_log_result().info_log();
  *error = reply.jit_log_result().error_log();
}

cudaError_t codeImageManagedVariable(std::uint64_t module, const char* name, DeviceVariable* variable) {
  std::lock_guard lock(gManagedMutex);
  auto it = gManagedVariables.find(module);
  if (it == gManagedVariables.end()) return cudaErrorInvalidSymbol;
  auto found = it->second.find(name);
  if (found == it->second.end()) return cudaErrorInvalidSymbol;
  *variable = found->second;
  return cudaSuccess;
}

cudaError_t unloadCodeImage(std::uint64_t module) {
  // At exit (a CUDA runtime in the program unloads its libraries from an exit handler) the
  // session's end releases the module in the worker; no call is made.
  if (Connection::exiting()) return cudaSuccess;
  forgetFunctionAttributes();      // its functions' answers go with it
  forgetManagedVariables(module);  // the worker frees their memory with the module
  v1::CallRequest request;
  request.mutable_module_unload()->set_module(module);
  v1::CallReply reply;
  return invoke(request, &reply);
}

cudaError_t codeImageKernel(std::uint64_t module, const char* name, KernelLayout* layout) {
  v1::CallRequest request;
  auto* get = request.mutable_module_get_function();
  get->set_module(module);
  get->set_name(name);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  *layout = ModuleRegistry::kernelLayout(reply.function_info());
  return cudaSuccess;
}

cudaError_t codeImageVariable(std::uint64_t module, const char* name, DeviceVariable* variable) {
  v1::CallRequest request;
  auto* get = request.mutable_module_get_global();
  get->set_module(module);
  get->set_name(name);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  variable->dptr = reply.variable_info().dptr();
  variable->size = reply.variable_info().size();
  return cudaSuccess;
}

}  // namespace agileos::client
