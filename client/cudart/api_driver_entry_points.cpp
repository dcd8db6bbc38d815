// Driver entry points through the runtime (cudaGetDriverEntryPoint and ByVersion): answered by the
// driver shim's cuGetProcAddress, so every pointer handed out is a function of libagileos_cuda.so,
// on the same session as this shim (one world), never of a real driver.
//
// The driver shim is opened by absolute path from this shim's own directory (the shim directory
// the sandbox mounts read-only, where it is installed as libcuda.so.1 and libagileos_cuda.so), never
// by soname, and only a file whose real name is libagileos_cuda.so, so that neither a library search
// path nor an installation beside the real driver can substitute the real libcuda.so.1. Without the
// driver shim there, the calls fail closed with cudaErrorNotSupported.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

#include "client/common/log.h"
#include "client/session/error_state.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

// cuGetProcAddress_v2's type, spelled without cuda.h (the runtime shim does not include it).
using ProcAddressLookup = int (*)(const char* symbol, void** pfn, int cudaVersion, std::uint64_t flags,
                                  int* symbolStatus);
constexpr std::uint64_t kDriverLegacyStream = 1;     // CU_GET_PROC_ADDRESS_LEGACY_STREAM
constexpr std::uint64_t kDriverPerThreadStream = 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

// The driver shim's cuGetProcAddress_v2, or null if it is not beside this shim. Looked up once.
ProcAddressLookup driverShimLookup() {
  static std::once_flag once;
  static ProcAddressLookup lookup = nullptr;
  std::call_once(once, [] {
    Dl_info self{};
    if (::dladdr(reinterpret_cast<void*>(&driverShimLookup), &self) == 0 || self.dli_fname == nullptr) return;
    const std::string path = self.dli_fname;
    const std::string directory = path.substr(0, path.rfind('/') + 1);
    // Only a file that really is libagileos_cuda.so (libcuda.so.1 in the shim directory links to
    // it): where this shim is installed beside the real driver, its libcuda.so.1 is never opened.
    for (const char* name : {"libagileos_cuda.so", "libcuda.so.1"}) {
      if (directory.empty()) break;
      char resolved[PATH_MAX];
      if (::realpath((directory + name).c_str(), resolved) == nullptr) continue;
      const std::string target = resolved;
      if (target.substr(target.rfind('/') + 1) != "libagileos_cuda.so") continue;
      void* handle = ::dlopen(resolved, RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) continue;
      lookup = reinterpret_cast<ProcAddressLookup>(::dlsym(handle, "cuGetProcAddress_v2"));
      if (lookup != nullptr) return;
    }
    AGILEOS_LOG_WARN(
        "cudaGetDriverEntryPoint: the AgileOS driver shim is not beside %s; returning "
        "cudaErrorNotSupported",
        path.c_str());
  });
  return lookup;
}

cudaError_t entryPoint(const char* symbol, void** funcPtr, unsigned cudaVersion, unsigned long long flags,
                       cudaDriverEntryPointQueryResult* driverStatus, bool perThreadByDefault) {
  if (symbol == nullptr || funcPtr == nullptr) return recordError(cudaErrorInvalidValue);
  if (flags > (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream))
    return recordError(cudaErrorInvalidValue);
  *funcPtr = nullptr;
  if (driverStatus != nullptr) *driverStatus = cudaDriverEntryPointSymbolNotFound;
  const ProcAddressLookup lookup = driverShimLookup();
  if (lookup == nullptr) return recordError(cudaErrorNotSupported);
  const bool perThread =
      (flags & cudaEnablePerThreadDefaultStream) != 0 || (flags == cudaEnableDefault && perThreadByDefault);
  int status = cudaDriverEntryPointSymbolNotFound;
  // CUresult and cudaError_t agree on the codes cuGetProcAddress returns (0 and invalid value).
  const int result = lookup(symbol, funcPtr, static_cast<int>(cudaVersion),
                            perThread ? kDriverPerThreadStream : kDriverLegacyStream, &status);
  if (result != 0) return recordError(cudaErrorInvalidValue);
  if (driverStatus != nullptr) *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
  return cudaSuccess;
}

}  // namespace

extern "C" {

// Without a version, the CUDA version this runtime was built for, as libcudart answers.
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* driverStatus) {
  return entryPoint(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, false);
}
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* driverStatus) {
  return entryPoint(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, true);
}
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* driverStatus) {
  return entryPoint(symbol, funcPtr, cudaVersion, flags, driverStatus, false);
}
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr,
                                                  unsigned int cudaVersion, unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* driverStatus) {
  return entryPoint(symbol, funcPtr, cudaVersion, flags, driverStatus, true);
}

}  // extern "C"
