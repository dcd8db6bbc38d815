// Device code loaded at run time, shared by the runtime shim (cudaLibraryLoadData and friends)
// and the driver shim (cuModuleLoadData, cuLibraryLoadData and friends) (untrusted side).
//
// The client never interprets an image beyond finding its length; the worker parses it, puts it
// through the kernel memory guard like any registered fatbin (one gate for every code-loading
// path), loads it and reports each kernel's parameter layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "client/session/module_registry.h"

namespace agileos::client {

inline constexpr std::uint64_t kMaxCodeImageBytes = 512ull << 20;

// Copies the image at `code` (a fatbin, an ELF cubin, or NUL-terminated PTX), sized the way the
// driver sizes it, without faulting: cudaErrorInvalidKernelImage when it cannot be sized or read
// (a header that points into memory the program cannot read, a text with no NUL).
// A version-2 wrapper's relocatable objects (a separately compiled image's, fatbin_copy.h) go to
// *relocatableObjects when it is given (left out, with a warning, when they cannot be copied).
cudaError_t copyCodeImage(const void* code, std::string* image,
                          std::vector<std::string>* relocatableObjects = nullptr);
// Reads an image file whole; cudaErrorFileNotFound if it cannot be opened.
cudaError_t readCodeImageFile(const char* path, std::string* image);

// Loads an image in the worker; *module is the worker's token for it. The image's __managed__
// variables get their memory now, as the driver gives it at a load (managed memory of the
// session, one address for the program and the device, holding the variable's initial bytes);
// if one cannot be bound the module is unloaded and the load fails.
// `relocatableObjects`: see copyCodeImage; sent beside the image (ModuleLoadImage).
cudaError_t loadCodeImage(std::string image, std::uint64_t* module,
                          std::vector<std::string> relocatableObjects = {});
// Unloads it; its managed variables' memory goes with it.
cudaError_t unloadCodeImage(std::uint64_t module);
// A __managed__ variable of a loaded image by its (mangled) name: its managed memory
// (cuLibraryGetManaged, and cuModuleGetGlobal of such a variable). cudaErrorInvalidSymbol when the
// image has no managed variable of that name.
cudaError_t codeImageManagedVariable(std::uint64_t module, const char* name, DeviceVariable* variable);
// Resolves a kernel of a loaded image by its (mangled) name.
cudaError_t codeImageKernel(std::uint64_t module, const char* name, KernelLayout* layout);
// Resolves a __device__ or __constant__ variable of a loaded image by its (mangled) name; the
// caller registers it with ModuleRegistry::addLoadedVariable so that copies may name it.
cudaError_t codeImageVariable(std::uint64_t module, const char* name, DeviceVariable* variable);

// The JIT's info and error logs for this PTX text, compiled by the worker for the logs only (the
// code is discarded; the text must parse there). Empty logs when the worker refuses.
void jitLogsOf(const std::string& ptx, bool verbose, std::string* info, std::string* error);

}  // namespace agileos::client
